package registry_test

import (
	"strings"
	"testing"

	"github.com/skillport/skillport/internal/ocitest"
)

// TestCLIPublishOCI publishes what push wrote to an OCI registry: the
// skills of the reference, with its digest recorded where a git source
// records its commit; a reference the registry lacks publishes nothing.
func TestCLIPublishOCI(t *testing.T) {
	dsn := newDB(t)
	reg := ocitest.Start(t)
	// The shared binary is built (and kept) in the user cache before it
	// moves to this test's folder, where the OCI blobs are cached.
	skillportBin(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	ref := "oci://" + reg.Host + "/acme/skills:v1"
	out := skillport(t, 0, "push", examples, ref)
	digest := strings.TrimSuffix(strings.SplitN(strings.SplitN(out, "(", 2)[1], ")", 2)[0], ")")
	out = skillport(t, 0, "publish", "--registry", dsn, "team="+ref)
	if !strings.Contains(out, `published "team": 5 added`) {
		t.Errorf("publish of an OCI source:\n%s", out)
	}
	if out := skillport(t, 0, "registry", "versions", "--registry", dsn, "team/code-review"); !strings.Contains(out, digest[:len("sha256:")+12]) {
		t.Errorf("the OCI source's versions do not record %s:\n%s", digest, out)
	}
	out = skillport(t, 1, "publish", "--registry", dsn, "other=oci://"+reg.Host+"/acme/none:v1")
	if !strings.Contains(out, "acme/none") {
		t.Errorf("publish of a missing reference:\n%s", out)
	}
	skillport(t, 1, "registry", "versions", "--registry", dsn, "other/code-review")
	out = skillport(t, 2, "publish", "--registry", dsn, "oci://"+reg.Host+"/Acme")
	if !strings.Contains(out, "bad OCI reference") {
		t.Errorf("publish of a bad reference:\n%s", out)
	}
}
