package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillport/skillport/host"
	"github.com/skillport/skillport/internal/budget"
)

// TestReadSkillFileChargesBudget: a read_skill_file answer of a large
// file is charged to the byte budget the endpoint puts in the request's
// context, the one the server's large reads share: while it is spent the
// read waits, then fails naming the limit, and small files never wait;
// once it is free, the read is served and its bytes given back.
func TestReadSkillFileChargesBudget(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "big", "Large files.")
	big := strings.Repeat("a line of a large reference file\n", 1<<20/32)
	for name, body := range map[string]string{"big.md": big, "small.md": "small\n"} {
		if err := os.WriteFile(filepath.Join(dir, "big", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	up, _ := ourUpstream(t, "docs", dir)
	g := newGateway(t, []host.Origin{up}, nil, nil)
	<-g.Ready()
	b := budget.New(4<<20, 200*time.Millisecond)
	ctx := budget.WithContext(context.Background(), b)
	if _, err := g.ReadSkill(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	spent, err := b.Acquire(ctx, 4<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ReadSkillFile(ctx, "big", "big.md"); err == nil || !strings.Contains(err.Error(), "limit of bytes") || !strings.Contains(err.Error(), "read_skill_file") {
		t.Errorf("a large read with the budget spent: %v, want a refusal naming the limit", err)
	}
	if out, err := g.ReadSkillFile(ctx, "big", "small.md"); err != nil || !strings.Contains(out, "small") {
		t.Errorf("a small read with the budget spent: %v", err)
	}
	spent()
	if out, err := g.ReadSkillFile(ctx, "big", "big.md"); err != nil || !strings.Contains(out, "a line of a large") {
		t.Errorf("a large read with the budget free: %v", err)
	}
	if n := b.InUse(); n != 0 {
		t.Errorf("%d bytes still charged after the read", n)
	}
}
