//go:build !skillport_no_sep2076

package skillserver_test

import "github.com/skillport/skillport/skillserver"

func init() {
	statelessProfileSets = append(statelessProfileSets, []skillserver.Profile{skillserver.ProfileSEP2640, skillserver.ProfileSEP2076})
}
