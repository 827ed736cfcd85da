package skill

import (
	"bytes"
	"errors"

	"go.yaml.in/yaml/v3"
)

// A Parser parses SKILL.md files one after another with the results of
// [Parse], for less. go-yaml sets up each stream it parses (buffers and
// parser state, about 3 KiB and a dozen allocations), which for a
// frontmatter of a few lines costs about as much as parsing it. A Parser
// feeds the frontmatters it is given to one stream instead, each as a
// document of its own between a "---" line and "..." lines that the Parser
// writes (three: go-yaml looks two tokens ahead, and must find them
// before the next frontmatter is given).
//
// Only a frontmatter that is provably the same document there as alone
// takes that way: one with no line that could start or end a document or
// hold a directive (starting "---", "..." or "%"), without characters
// go-yaml reads as line breaks or byte order marks other than CR and LF,
// and whose root is a block mapping at column 1, which only a document
// marker or the end of the stream can end. Anything else, and anything the
// stream refuses or the conversion to JSON rejects, is parsed alone by
// Parse's own code, which also gives every error: results and errors are
// always those of Parse. The stream starts afresh after each of those.
//
// A Parser is not safe for concurrent use. The zero Parser is ready.
type Parser struct {
	feed feed
	dec  *yaml.Decoder
	line int // the line of the stream on which the next "---" goes
}

// Parse parses the bytes of a SKILL.md as [Parse] does.
func (p *Parser) Parse(data []byte) (*Document, error) {
	yamlText, body, bodyLine, err := split(data)
	if err != nil {
		return nil, err
	}
	fm, ok := p.stream(yamlText)
	if !ok {
		if fm, err = parseFrontmatter(yamlText, 1); err != nil {
			return nil, err
		}
	}
	return &Document{Frontmatter: fm, Body: body, BodyLine: bodyLine}, nil
}

// stream parses text, a frontmatter starting on line 2 of its file, as a
// document of p's stream. It reports false when text must be parsed alone.
func (p *Parser) stream(text []byte) (fm Frontmatter, ok bool) {
	if !streamable(text) {
		return Frontmatter{}, false
	}
	if p.dec == nil {
		p.dec, p.line = yaml.NewDecoder(&p.feed), 1
	}
	start := p.line + 1 // the line of the stream text starts on
	p.feed.add(text)
	p.line = start + lineBreaks(text) + 3
	defer func() {
		if r := recover(); r != nil { // go-yaml's own bugs: alone, as Parse meets them
			ok = false
		}
		if !ok {
			p.dec, p.feed = nil, feed{b: p.feed.b[:0]}
		}
	}()
	var root yaml.Node
	if err := p.dec.Decode(&root); err != nil {
		return Frontmatter{}, false
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode || doc.Style&yaml.FlowStyle != 0 || doc.Column != 1 {
		return Frontmatter{}, false
	}
	// The file line of a node is its stream line less the lines of the
	// documents before this one, plus the delimiter line.
	c := converter{lineOffset: 2 - start}
	c.buf.Grow(len(text) + 64)
	fm, err := c.frontmatter(doc)
	return fm, err == nil
}

// streamable reports whether text, a frontmatter, is one document in a
// stream exactly as it is alone (see [Parser]) as far as its bytes tell.
func streamable(text []byte) bool {
	if len(text) == 0 || text[len(text)-1] != '\n' {
		return false
	}
	for _, c := range [][]byte{[]byte("\u0085"), []byte("\u2028"), []byte("\u2029"), []byte("\uFEFF")} {
		if bytes.Contains(text, c) {
			return false
		}
	}
	for i := 0; i < len(text); i++ {
		if i > 0 && text[i-1] != '\n' && text[i-1] != '\r' {
			continue // not the start of a line
		}
		rest := text[i:]
		if rest[0] == '%' || bytes.HasPrefix(rest, []byte("---")) || bytes.HasPrefix(rest, []byte("...")) {
			return false
		}
	}
	return true
}

// lineBreaks counts the line breaks of text as go-yaml does: CRLF, CR and
// LF (streamable text has no others).
func lineBreaks(text []byte) int {
	n := bytes.Count(text, []byte("\n"))
	for i, c := range text {
		if c == '\r' && (i+1 == len(text) || text[i+1] != '\n') {
			n++
		}
	}
	return n
}

// docEnd ends each document of a Parser's stream.
const docEnd = "...\n...\n...\n"

// errStarved is what a feed reports when go-yaml reads past the documents
// it was given: the document being parsed is then parsed alone.
var errStarved = errors.New("skill: no more input")

// feed is the io.Reader of a Parser's stream: the documents not yet read.
type feed struct {
	b   []byte
	off int
}

// add appends a document, first moving what go-yaml has not read yet to
// the front, so that the buffer holds no more than about one document.
func (f *feed) add(text []byte) {
	if f.off > 0 {
		f.b = f.b[:copy(f.b, f.b[f.off:])]
		f.off = 0
	}
	f.b = append(append(append(f.b, "---\n"...), text...), docEnd...)
}

func (f *feed) Read(p []byte) (int, error) {
	if f.off == len(f.b) {
		return 0, errStarved
	}
	n := copy(p, f.b[f.off:])
	f.off += n
	if f.off == len(f.b) { // all read: the next documents reuse the memory
		f.b, f.off = f.b[:0], 0
	}
	return n, nil
}
