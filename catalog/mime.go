package catalog

import (
	"net/url"
	"path"
	"strings"
)

// mimeTypes is fixed rather than taken from mime.TypeByExtension, whose
// answers depend on the machine's /etc/mime.types: a catalog must publish
// the same metadata wherever it is built.
var mimeTypes = map[string]string{
	".md":       "text/markdown",
	".markdown": "text/markdown",
	".txt":      "text/plain",
	".text":     "text/plain",
	".py":       "text/x-python",
	".sh":       "text/x-shellscript",
	".bash":     "text/x-shellscript",
	".js":       "text/javascript",
	".mjs":      "text/javascript",
	".cjs":      "text/javascript",
	".ts":       "text/x-typescript",
	".go":       "text/x-go",
	".rb":       "text/x-ruby",
	".rs":       "text/x-rust",
	".java":     "text/x-java",
	".c":        "text/x-c",
	".h":        "text/x-c",
	".css":      "text/css",
	".html":     "text/html",
	".htm":      "text/html",
	".csv":      "text/csv",
	".tsv":      "text/tab-separated-values",
	".xml":      "application/xml",
	".json":     "application/json",
	".yaml":     "application/yaml",
	".yml":      "application/yaml",
	".toml":     "application/toml",
	".sql":      "application/sql",
	".svg":      "image/svg+xml",
	".png":      "image/png",
	".jpg":      "image/jpeg",
	".jpeg":     "image/jpeg",
	".gif":      "image/gif",
	".webp":     "image/webp",
	".ico":      "image/x-icon",
	".pdf":      "application/pdf",
	".zip":      "application/zip",
	".gz":       "application/gzip",
	".tar":      "application/x-tar",
	".wasm":     "application/wasm",
	".woff":     "font/woff",
	".woff2":    "font/woff2",
	".ttf":      "font/ttf",
	".otf":      "font/otf",
	".mp3":      "audio/mpeg",
	".wav":      "audio/wav",
	".mp4":      "video/mp4",
	".docx":     "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".xlsx":     "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".pptx":     "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}

// mimeType picks a file's media type from its extension, falling back on
// what the content is: text/plain for UTF-8 text, octet-stream otherwise.
func mimeType(name string, text bool) string {
	if t, ok := mimeTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	if text {
		return "text/plain"
	}
	return "application/octet-stream"
}

// escapeSegment percent-encodes a path segment for a URI. Plain names
// (letters, digits, "-", ".", "_", "~") pass unchanged.
func escapeSegment(s string) string {
	return url.PathEscape(s)
}
