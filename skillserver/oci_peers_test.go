package skillserver_test

import (
	"fmt"
	"os/exec"
	"testing"

	"github.com/skillport/skillport/internal/ocitest"
)

// TestConformanceSuiteOCI pushes the example catalog to a real registry
// (docker-registry on loopback) with skillport push and runs the SEP-2640
// scenarios of the official conformance suite against serve of the
// pushed oci:// tag, with no flag and with --stateless.
func TestConformanceSuiteOCI(t *testing.T) {
	reg := ocitest.Start(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // oci:// blobs are cached there
	ref := "oci://" + reg.Host + "/acme/skills:v1"
	push := exec.Command(skillportBin, "push", examples, ref)
	push.Env = append(push.Environ(), "DOCKER_CONFIG="+t.TempDir())
	if out, err := push.CombinedOutput(); err != nil {
		t.Fatalf("skillport push: %v\n%s", err, out)
	}
	for _, mode := range [][]string{nil, {"--stateless"}} {
		srv := serveHTTP(t, ref, mode...)
		sepScenarios(t, fmt.Sprint(mode), srv.URL)
	}
}
