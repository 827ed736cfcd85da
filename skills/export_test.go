package skills

import "github.com/skillport/skillport/internal/published"

// OnChange calls fn after each change of what sv serves, until the
// returned function is called.
func OnChange(sv *Served, fn func()) (cancel func()) {
	return sv.src.OnChange(func(_, _ published.Snapshot) { fn() })
}
