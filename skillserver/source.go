package skillserver

import (
	"github.com/skillport/skillport/catalog"
	"github.com/skillport/skillport/internal/published"
)

// NewCatalogSource returns the [SkillSource] serving c, a catalog built
// with [catalog.Open] or [catalog.OpenDir]. The server answers from the
// indexes c has built already, so serving a catalog costs no second index
// of it. (A *catalog.Catalog is not a SkillSource itself: its ReadFile
// takes no context.) To follow a folder's changes, serve it with package
// skills.
func NewCatalogSource(c *catalog.Catalog) SkillSource {
	return published.NewCatalogSource(c)
}
