package ocisource

import "github.com/skillport/skillport/skill"

// The skill limits, checked against what a registry declares.
const (
	maxFiles = skill.MaxFiles
	maxBytes = skill.MaxBytes
)
