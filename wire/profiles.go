package wire

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The compatibility profiles: three pre-SEP-2640 wire designs that real
// clients and servers speak, served and consumed next to the extension. None
// of them is part of the extension; the reserved "skills/" prefix means the
// extension's own definitions win wherever a later revision defines one of
// these names.

// IndexURI is the well-known index resource of the skill:// index profile
// (seed 002 and the gemini-cli and goose host prototypes).
const IndexURI = "skill://index.json"

// IndexSchema is the $schema the index resource declares: that of the
// Agent Skills discovery index, whose skills[] shape it mirrors.
const IndexSchema = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"

// IndexTypeSkillMD is the only index entry type a skill:// server publishes:
// every file is individually addressable, so archives never apply.
const IndexTypeSkillMD = "skill-md"

// Index is the content of skill://index.json.
type Index struct {
	Schema string       `json:"$schema"`
	Skills []IndexEntry `json:"skills"`
}

// IndexEntry is one skill of the index. Digest covers the SKILL.md only: a
// host that has only the index can verify nothing else of the skill.
type IndexEntry struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
	URL         string `json:"url"`
	Digest      string `json:"digest,omitempty"`
	// Frontmatter is the SKILL.md frontmatter verbatim (the ADR 2026-06-05
	// revision of the index); absent in older indexes.
	Frontmatter json.RawMessage `json:"frontmatter,omitempty"`
	// Meta is the entry's _meta object in a discovery document
	// ([Discovery]): the same object as the skill's skills/list entry
	// carries, such as its signature bundle under [MetaSignature].
	Meta json.RawMessage `json:"_meta,omitempty"`
}

// Method names of the legacy designs. skills/list and skills/get are
// shared with the extension and told apart by their parameters.
const (
	MethodReadSkill        = "skills/read"
	MethodReadReference    = "skills/read_reference"
	MethodExecute          = "skills/execute"
	NotificationSkillsList = "notifications/skills/list_changed"
)

// Error codes of seed 001, sent only when a server opts into them: -32002
// is also the base protocol's legacy "resource not found" code.
const (
	CodeSkillNotFound     = -32002
	CodeScriptFailed      = -32003
	CodeReferenceNotFound = -32004
)

// LegacyCapability is the top-level "skills" server capability of SEP-2076
// and seed 001. It lives outside the base schema's ServerCapabilities.
type LegacyCapability struct {
	ListChanged bool `json:"listChanged"`
	// Scripts is seed 001's flag: the server runs skills/execute.
	Scripts bool `json:"scripts,omitempty"`
}

// SkillArgument is an argument a SEP-2076 skill accepts.
type SkillArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required"`
}

// PromptReference names a prompt of the same server (SEP-2076).
type PromptReference struct {
	Type string `json:"type"` // "ref/prompt"
	Name string `json:"name"`
}

// ResourceReference names a resource or template of the same server (SEP-2076).
type ResourceReference struct {
	Type string `json:"type"` // "ref/resource"
	URI  string `json:"uri"`
}

// SkillDependencies are what a SEP-2076 skill uses of its server.
type SkillDependencies struct {
	Tools     []string            `json:"tools,omitempty"`
	Prompts   []PromptReference   `json:"prompts,omitempty"`
	Resources []ResourceReference `json:"resources,omitempty"`
}

// Empty reports whether no dependency is named.
func (d *SkillDependencies) Empty() bool {
	return d == nil || len(d.Tools) == 0 && len(d.Prompts) == 0 && len(d.Resources) == 0
}

// ListEntry is a skills/list entry as a server answering several designs
// sends it: the extension's fields (URI, Frontmatter, Resources) plus the
// SEP-2076 / seed-001 fields. Each reader ignores the fields it does not
// know, which is what lets one method serve them all. It is the legacy
// superset of [Skill]: code that speaks only the extension uses Skill.
type ListEntry struct {
	URI         string          `json:"uri,omitempty"`
	Frontmatter json.RawMessage `json:"frontmatter,omitempty"`
	Resources   *Resources      `json:"resources,omitempty"`
	// Meta is the extension entry's _meta ([Skill.Meta]): a signature, a
	// review state.
	Meta json.RawMessage `json:"_meta,omitempty"`

	Name         string             `json:"name,omitempty"`
	Title        string             `json:"title,omitempty"`
	Description  string             `json:"description,omitempty"`
	Version      string             `json:"version,omitempty"`
	Tags         []string           `json:"tags,omitempty"`
	Arguments    []SkillArgument    `json:"arguments,omitempty"`
	Dependencies *SkillDependencies `json:"dependencies,omitempty"`
}

// ListResult is skills/list as a multi-profile server sends it. The
// extension's fields are pointers so that a server without the SEP-2640
// profile can leave them out; with it they are always present. It is the
// legacy superset of [ListSkillsResult]: code that speaks only the
// extension uses ListSkillsResult.
type ListResult struct {
	mcp.ResultBase
	ResultType string      `json:"resultType,omitempty"`
	Skills     []ListEntry `json:"skills"`
	NextCursor string      `json:"nextCursor,omitempty"`
	TTLMs      *int64      `json:"ttlMs,omitempty"`
	CacheScope string      `json:"cacheScope,omitempty"`
}

// GetParams are the parameters of skills/get in every design: URI for the
// extension, Name and Arguments for SEP-2076. Exactly one of URI and Name
// must be set. It is the legacy superset of [GetSkillParams]: code that
// speaks only the extension uses GetSkillParams.
type GetParams struct {
	mcp.ParamsBase
	URI       *string         `json:"uri,omitempty"`
	Name      *string         `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// SkillFile is a supporting file of a SEP-2076 skill, readable with
// resources/read at URI.
type SkillFile struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	URI         string `json:"uri"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Required    bool   `json:"required"`
}

// GetByNameResult is the SEP-2076 skills/get result.
type GetByNameResult struct {
	mcp.ResultBase
	Description  string             `json:"description,omitempty"`
	Instructions string             `json:"instructions"`
	Dependencies *SkillDependencies `json:"dependencies,omitempty"`
	Files        []SkillFile        `json:"files"`
}

// NameParams name one skill (skills/read).
type NameParams struct {
	mcp.ParamsBase
	Name string `json:"name"`
}

// FileRef is a script, reference or asset of a seed-001 skill.
type FileRef struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Path        string `json:"path"`
}

// Annotations are seed 001's hints on a skill or its contents.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// FullSkill is the skill of a seed-001 skills/read result.
type FullSkill struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	Instructions string          `json:"instructions"`
	Scripts      []FileRef       `json:"scripts"`
	References   []FileRef       `json:"references"`
	Assets       []FileRef       `json:"assets"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	Keywords     []string        `json:"keywords,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

// ReadResult is the result of skills/read.
type ReadResult struct {
	mcp.ResultBase
	Skill FullSkill `json:"skill"`
}

// ReadReferenceParams are the parameters of skills/read_reference.
// Reference is a path relative to the skill root, a file name, or a file
// name without its extension.
type ReadReferenceParams struct {
	mcp.ParamsBase
	Name      string `json:"name"`
	Reference string `json:"reference"`
}

// ReferenceContent is one file's content: Text for UTF-8 files, Blob
// (base64 in JSON) otherwise.
type ReferenceContent struct {
	URI      string  `json:"uri"`
	MIMEType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     []byte  `json:"blob,omitempty"`
}

// ReadReferenceResult is the result of skills/read_reference.
type ReadReferenceResult struct {
	mcp.ResultBase
	Content ReferenceContent `json:"content"`
}

// ExecuteParams are the parameters of skills/execute. Script is resolved
// like a reference, among the files under the skill's scripts/ directory.
type ExecuteParams struct {
	mcp.ParamsBase
	Name      string          `json:"name"`
	Script    string          `json:"script"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// OutputResource is a file a script left behind, embedded in the result.
type OutputResource struct {
	URI      string  `json:"uri"`
	Name     string  `json:"name,omitempty"`
	MIMEType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     []byte  `json:"blob,omitempty"`
}

// ExecuteContent is one content item of a skills/execute result: "text"
// (the script's output) or "resource" (a file it wrote).
type ExecuteContent struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	Resource *OutputResource `json:"resource,omitempty"`
}

// ExecuteResult is the result of skills/execute, shaped like CallToolResult.
type ExecuteResult struct {
	mcp.ResultBase
	Content []ExecuteContent `json:"content"`
	IsError bool             `json:"isError"`
}
