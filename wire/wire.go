// Package wire holds the messages of the MCP Skills Extension
// (io.modelcontextprotocol/skills, SEP-2640) as Go types, shared by the
// server that writes them and the host that reads them.
//
// Decoding is strict where the specification is: an entry whose resources
// field is absent, null or anything but an array or "dynamic" fails to
// decode, so a host can never load it by accident. Everything a hostile
// server might put in an entry that decodes is still checked before use,
// by skillclient.ValidateEntry (which host.ValidateEntry builds on).
//
// The types named after the extension's methods ([ListSkillsResult],
// [Skill], [GetSkillParams], [ReadDirectoryResult]) are the extension's
// own. [ListResult], [ListEntry] and [GetParams] are their supersets for a
// server that also answers the older designs (compatibility profiles);
// code that speaks only the extension never needs them.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillport/skillport/skill"
)

// ExtensionID is the capability key of the Skills Extension.
const ExtensionID = "io.modelcontextprotocol/skills"

// Method names defined by the extension.
const (
	MethodListSkills    = "skills/list"
	MethodGetSkill      = "skills/get"
	MethodReadDirectory = "resources/directory/read"
)

// ResultComplete is the only resultType the extension allows.
const ResultComplete = "complete"

// DirectoryMIMEType marks directory resources.
const DirectoryMIMEType = "inode/directory"

// Limits of the extension, per skill.
const (
	MaxResources  = skill.MaxFiles
	MaxTotalBytes = skill.MaxBytes
)

// Cache scopes of a CacheableResult.
const (
	CacheScopePublic  = "public"
	CacheScopePrivate = "private"
)

// Settings are the extension's capability settings.
type Settings struct {
	DirectoryRead bool `json:"directoryRead,omitempty"`
}

// SkillResource is one file of a skill's manifest.
type SkillResource struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// Resources is a skill's manifest: a complete list of files, or "dynamic".
// It refuses to decode from anything else, including null.
type Resources struct {
	// Dynamic is set when the server generates content and publishes no digests.
	Dynamic bool
	// Files is the complete manifest when Dynamic is false.
	Files []SkillResource
}

// MarshalJSON renders "dynamic" or the array (never null).
func (r Resources) MarshalJSON() ([]byte, error) {
	if r.Dynamic {
		return []byte(`"dynamic"`), nil
	}
	if r.Files == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(r.Files)
}

// ErrInvalidResources is returned when an entry's resources field is neither
// an array of resources nor the string "dynamic".
var ErrInvalidResources = errors.New(`resources must be an array of {uri, digest, size} or "dynamic"`)

// UnmarshalJSON accepts an array or "dynamic" and nothing else.
func (r *Resources) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case string(data) == `"dynamic"`:
		*r = Resources{Dynamic: true}
		return nil
	case len(data) > 0 && data[0] == '[':
		var files []SkillResource
		if err := json.Unmarshal(data, &files); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidResources, err)
		}
		if files == nil {
			files = []SkillResource{}
		}
		*r = Resources{Files: files}
		return nil
	}
	return ErrInvalidResources
}

// Skill is a skill entry, as skills/list and skills/get return it.
type Skill struct {
	URI         string            `json:"uri"`
	Frontmatter skill.Frontmatter `json:"frontmatter"`
	// Resources is nil when the field was absent or null: such an entry is
	// invalid and a host must not load it.
	Resources *Resources `json:"resources"`
	// Meta is the entry's _meta object, absent unless the server attaches
	// something, such as a signature bundle under [MetaSignature].
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// MetaSignature is the _meta key of an entry's Sigstore bundle, a JSON
// object signing the skill's complete resource set (docs/signing.md).
const MetaSignature = "io.skillport/signature"

// MetaScanFindings is the _meta key of the scan findings a registry
// recorded for the version an entry serves: a JSON array of objects with
// scanner, ruleId, level, file, line and message (SARIF's result,
// flattened; docs/registry-scanning.md). Absent when there are none.
const MetaScanFindings = "io.skillport/scan-findings"

// MetaReview is the _meta key of an entry served before review: a JSON
// object {"state": "pending"} (docs/registry-governance.md).
const MetaReview = "io.skillport/review"

// ListSkillsParams are the parameters of skills/list.
type ListSkillsParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// ListSkillsResult is the result of skills/list.
type ListSkillsResult struct {
	mcp.ResultBase
	ResultType string  `json:"resultType"`
	Skills     []Skill `json:"skills"`
	NextCursor string  `json:"nextCursor,omitempty"`
	TTLMs      int64   `json:"ttlMs"`
	CacheScope string  `json:"cacheScope"`
}

// GetSkillParams are the parameters of skills/get.
type GetSkillParams struct {
	mcp.ParamsBase
	URI string `json:"uri"`
}

// GetSkillResult is the result of skills/get.
type GetSkillResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Skill      Skill  `json:"skill"`
	TTLMs      int64  `json:"ttlMs"`
	CacheScope string `json:"cacheScope"`
}

// ReadDirectoryParams are the parameters of resources/directory/read.
type ReadDirectoryParams struct {
	mcp.ParamsBase
	URI    string `json:"uri"`
	Cursor string `json:"cursor,omitempty"`
}

// DirectoryEntry is one child in a directory listing: a Resource as the base
// protocol defines it, carrying metadata only.
type DirectoryEntry struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        *int64 `json:"size,omitempty"`
}

// ReadDirectoryResult is the result of resources/directory/read.
type ReadDirectoryResult struct {
	mcp.ResultBase
	ResultType string           `json:"resultType"`
	Resources  []DirectoryEntry `json:"resources"`
	NextCursor string           `json:"nextCursor,omitempty"`
	// TTLMs and CacheScope are not required on this PaginatedResult, but
	// the TypeScript reference client insists on them under 2026-07-28, so
	// servers send them; hosts must not depend on them.
	TTLMs      *int64 `json:"ttlMs,omitempty"`
	CacheScope string `json:"cacheScope,omitempty"`
}
