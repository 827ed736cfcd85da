// Package skill reads the Agent Skills format: a SKILL.md file made of YAML
// frontmatter between "---" lines followed by a Markdown body.
//
// The Skills Extension for MCP (SEP-2640) requires a server's listing to carry
// the frontmatter exactly as written, and a host to compare it field by field
// with what it later reads. So this package never normalises a skill into a
// struct: [Parse] keeps the frontmatter as an ordered, JSON-compatible
// [Frontmatter] value (YAML 1.2 core schema, numbers stay numbers, unknown
// fields pass through) and the body byte for byte. [Validate] then checks the
// fields against the Agent Skills specification and reports [Finding]s with
// stable rule ids, lines and columns.
//
// Input is treated as untrusted: anchors, aliases, tags and duplicate keys are
// refused before anything is expanded, and the frontmatter is bounded in size
// and depth, so a hostile SKILL.md costs bounded time and memory.
package skill
