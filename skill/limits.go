package skill

// Limits of one skill as the Skills Extension sets them. Every package
// that checks them (catalog when publishing, wire and host when
// consuming, server when looking up URIs) refers to these, so that a
// publisher and a consumer can never disagree.
const (
	// MaxFiles is the most files a skill may have, SKILL.md and the files
	// of nested skills included.
	MaxFiles = 512
	// MaxBytes is the most bytes a skill's files may total (16 MiB).
	MaxBytes = 16 << 20
	// MaxURILength is the longest resource URI published or accepted;
	// longer ones are skipped by publishers and refused by readers.
	MaxURILength = 2048
	// MaxURISegments is the most segments (authority included) a resource
	// URI may have; deeper ones are skipped by publishers and refused by
	// readers.
	MaxURISegments = 64
)
