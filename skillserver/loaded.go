package skillserver

import (
	"context"

	"github.com/skillport/skillport/internal/published"
)

// loaded tells Options.OnSkillLoaded that the skill at path was loaded
// by the request of ctx; "" is no load.
func (srv *Server) loaded(ctx context.Context, path string) {
	if path != "" && srv.opts.OnSkillLoaded != nil {
		srv.opts.OnSkillLoaded(ctx, path)
	}
}

// loadedFile is loaded for a read of uri answered from snap: a load when
// uri is the SKILL.md of a skill snap serves, nothing for any other file.
func (srv *Server) loadedFile(ctx context.Context, snap published.Snapshot, uri string) {
	if srv.opts.OnSkillLoaded == nil || snap == nil {
		return
	}
	if sk := snap.Skill(uri); sk != nil {
		srv.opts.OnSkillLoaded(ctx, sk.Path)
	}
}
