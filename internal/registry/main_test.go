package registry_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/skillport/skillport/internal/pgtest"
)

// pg is the PostgreSQL server shared by the package's tests; each test
// gets a database of its own from newDB.
var pg *pgtest.Server

var examples string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	_, file, _, _ := runtime.Caller(0)
	examples = filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(file))), "examples", "skills")
	return pgtest.Main(m, &pg)
}

var dbSeq atomic.Int64

// newDB returns the DSN of a fresh, empty database.
func newDB(t testing.TB) string {
	t.Helper()
	dsn, err := pg.NewDatabase(fmt.Sprintf("t%d", dbSeq.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}
