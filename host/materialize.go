package host

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/skillport/skillport/internal/filemode"
	"github.com/skillport/skillport/internal/install"
	"github.com/skillport/skillport/internal/skilluri"
)

// Sentinel errors of [Materialize]; test with errors.Is. Every error it
// returns wraps ErrMaterialize; a refused name also wraps ErrUnsafeName, and
// a set of names that would collide also wraps ErrNameCollision.
var (
	// ErrMaterialize is wrapped by errors from [Materialize].
	ErrMaterialize = errors.New("cannot materialize skill")
	// ErrUnsafeName marks a file or skill name holding a character whose
	// Unicode normalisation or case folding skillport cannot decide, or one
	// that no common filesystem accepts in a file name.
	ErrUnsafeName = errors.New("name cannot be materialized safely")
	// ErrNameCollision marks two names that could be the same file, or a
	// file and a directory, on a case-insensitive or normalising filesystem.
	ErrNameCollision = errors.New("names collide")
	// ErrUpToDate is returned, with the folder, when the skill folder
	// already holds exactly the verified files: nothing was written. A
	// second pull of unchanged content is not a failure.
	ErrUpToDate = errors.New("already up to date")
	// ErrExists marks a skill folder that exists with other content and
	// was left alone because [MaterializeOptions.Replace] is not set.
	ErrExists = errors.New("the skill folder exists with other content")
)

// MaterializeOptions configure [Materialize].
type MaterializeOptions struct {
	// Replace lets an existing skill folder of the same name be replaced.
	Replace bool
}

// Materialize writes a verified skill (files from [Host.FetchAll]) into
// dir/<name>, for hosts that read skills from folders only. It is all or
// nothing: files are written into a staging folder inside dir through
// os.Root, as regular files (never links) with mode 0644, or 0755 for a
// file that starts with "#!" (package internal/filemode: MCP carries no mode),
// and the folder is put in place in one step only when complete (a rename,
// or over an existing folder with Replace an atomic exchange where the
// system has one); a process killed meanwhile leaves the old folder or the
// new one, and a marked staging folder (".skillport-pull-*") that the next
// pull or install into dir removes. Paths come from
// the validated URIs. Names that would collide on a case-insensitive or
// normalising filesystem are refused with [ErrNameCollision], and
// so are names holding a character outside the scripts whose normalisation
// this package can decide without Unicode tables, with [ErrUnsafeName]
// (see [FoldName]). It returns the folder written.
//
// The result is an ordinary local skill: the user who pulls it takes
// responsibility for it, including its allowed-tools.
func Materialize(dir string, e *Entry, files []*File, opts *MaterializeOptions) (string, error) {
	var o MaterializeOptions
	if opts != nil {
		o = *opts
	}
	failErr := func(err error) (string, error) {
		return "", fmt.Errorf("%w %s from %s: %w", ErrMaterialize, e.Name, e.Origin, err)
	}
	fail := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w %s from %s: %s", ErrMaterialize, e.Name, e.Origin, fmt.Sprintf(format, args...))
	}
	if e.Dynamic || e.Files == nil {
		return fail("its content cannot be verified (dynamic)")
	}
	if len(files) != len(e.Files) {
		return fail("%d of %d files were fetched", len(files), len(e.Files))
	}
	if err := checkName(e.Name); err != nil {
		return failErr(fmt.Errorf("skill folder name: %w", err))
	}
	rels := make([]string, len(files))
	uris := make([]string, len(files))
	for i, f := range files {
		if _, ok := e.File(f.URI); !ok || !f.Verified {
			return fail("%s is not a verified file of the skill", f.URI)
		}
		u, err := skilluri.Parse(f.URI)
		if err != nil {
			return fail("%v", err)
		}
		rel, _ := skilluri.Within(e.Root, f.URI)
		n := strings.Count(rel, "/") + 1
		rels[i], uris[i] = strings.Join(u.Segments[len(u.Segments)-n:], "/"), f.URI
	}
	if err := checkPaths(rels, uris); err != nil {
		return failErr(err)
	}
	if target := filepath.Join(dir, e.Name); sameTree(target, rels, files) {
		return target, ErrUpToDate
	}
	// The folder is built complete in a staging folder beside it and
	// placed in one step (package internal/install, which install shares):
	// a crash leaves the old folder or the new one, and a staging folder
	// the next install or pull removes.
	st, err := install.NewStaging(dir, install.PullPrefix)
	if err != nil {
		return fail("%v", err)
	}
	defer st.Close()
	data := make([][]byte, len(files))
	for i, f := range files {
		data[i] = f.Data
	}
	built, err := st.Write(e.Name, rels, data)
	if err != nil {
		return fail("%v", err)
	}
	target := filepath.Join(dir, e.Name)
	if _, err := os.Lstat(target); err == nil {
		if sameTree(target, rels, files) {
			return target, ErrUpToDate
		}
		if !o.Replace {
			return failErr(fmt.Errorf("%w: %s differs from the server's version; replace it to update", ErrExists, target))
		}
	}
	if err := install.Place(built, target); err != nil {
		return fail("%v", err)
	}
	return target, nil
}

// sameTree reports whether dir holds exactly the regular files rels (slash
// paths) with the contents of files and the executable bit
// internal/filemode gives them, and nothing else: no other file, no
// link, no extra directory. Reads go through os.Root, so a link in dir is
// never followed, nor is dir itself when it is a link.
func sameTree(dir string, rels []string, files []*File) bool {
	// A link in place of the folder is not the folder, wherever it points.
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return false
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	want := make(map[string][]byte, len(rels))
	dirs := map[string]bool{".": true}
	for i, r := range rels {
		want[r] = files[i].Data
		for d := path.Dir(r); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	seen := 0
	same := true
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !same {
			same = false
			return fs.SkipAll
		}
		switch {
		case d.IsDir():
			same = dirs[p]
		case d.Type().IsRegular():
			data, ok := want[p]
			if !ok {
				same = false
				break
			}
			got, err := root.ReadFile(filepath.FromSlash(p))
			same = err == nil && bytes.Equal(got, data)
			// The owner's executable bit follows internal/filemode's rule
			// too (the umask may only have cleared others' bits).
			if fi, ierr := d.Info(); same {
				same = ierr == nil && fi.Mode().Perm()&0o100 == filemode.Mode(data)&0o100
			}
			seen++
		default:
			same = false
		}
		if !same {
			return fs.SkipAll
		}
		return nil
	})
	return err == nil && same && seen == len(rels)
}

// Why names outside ASCII are safe to compare by case folding alone.
//
// Names must be NFC-normalised and case-folded before the
// duplicate check, and the standard library has no normalisation tables. So
// only names that are provably their own NFC form are written, and for them
// NFC is the identity. A string is in NFC when every character in it has
// NFC_Quick_Check=Yes and combining class 0 (UAX #15, quick check): then no
// character decomposes, none is reordered, and none composes with the
// character before it (composition needs a second character with
// NFC_Quick_Check=Maybe: combining marks, Hangul medial and final jamo, a few
// Indic vowel signs). Every rune in [nfcStable] is a letter or digit of class
// 0 that is either undecomposable or a precomposed letter whose canonical
// decomposition is not excluded from recomposition (À, ǖ, ệ, Ё, ΐ, أ, ガ),
// so it is its own NFC form; no allowlisted rune is a mark or jamo. The
// composition exclusions (singletons like U+212B, U+0374, U+0387 and the CJK
// compatibility ideographs; U+FB1D and the other presentation forms; Greek
// Extended oxia letters) lie outside the allowlist. ASCII is trivially NFC.
// Hence NFC(s) == s, two accepted names are canonically equivalent only if
// they are equal, and a normalising filesystem (APFS, HFS+, ext4 casefold)
// can merge them only through case folding, which [FoldName] over-covers.

// nfcStable lists the non-ASCII runes a materialized name may hold, before
// the letter-or-digit filter of [nameRuneOK]. Fail closed: anything not
// listed is refused, including code points Unicode may assign later.
var nfcStable = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x00C0, Hi: 0x00D6, Stride: 1}, // Latin-1 letters, without × (U+00D7)
		{Lo: 0x00D8, Hi: 0x00F6, Stride: 1}, // and ÷ (U+00F7)
		{Lo: 0x00F8, Hi: 0x024F, Stride: 1}, // Latin-1 letters, Latin Extended-A and -B
		{Lo: 0x0370, Hi: 0x0373, Stride: 1}, // Greek, without U+0374 (singleton),
		{Lo: 0x0376, Hi: 0x0377, Stride: 1}, // U+037A (ypogegrammeni),
		{Lo: 0x037B, Hi: 0x037D, Stride: 1}, // U+037E and U+0387 (singletons)
		{Lo: 0x037F, Hi: 0x0386, Stride: 1},
		{Lo: 0x0388, Hi: 0x03FF, Stride: 1},
		{Lo: 0x0400, Hi: 0x0481, Stride: 1}, // Cyrillic, without the combining
		{Lo: 0x048A, Hi: 0x04FF, Stride: 1}, // marks U+0483–U+0489
		{Lo: 0x05D0, Hi: 0x05EA, Stride: 1}, // Hebrew letters (no points)
		{Lo: 0x0620, Hi: 0x064A, Stride: 1}, // Arabic letters (no harakat)
		{Lo: 0x0660, Hi: 0x0669, Stride: 1}, // Arabic-Indic digits
		{Lo: 0x0671, Hi: 0x06D3, Stride: 1}, // Persian, Urdu and other Arabic-script letters
		{Lo: 0x06D5, Hi: 0x06D5, Stride: 1},
		{Lo: 0x06F0, Hi: 0x06F9, Stride: 1}, // Extended Arabic-Indic (Persian) digits
		{Lo: 0x1E00, Hi: 0x1EFF, Stride: 1}, // Latin Extended Additional (Vietnamese)
		{Lo: 0x3005, Hi: 0x3007, Stride: 1}, // 々 〆 〇
		{Lo: 0x3041, Hi: 0x3096, Stride: 1}, // Hiragana, without the combining
		{Lo: 0x309D, Hi: 0x309F, Stride: 1}, // sound marks U+3099–U+309C
		{Lo: 0x30A1, Hi: 0x30FF, Stride: 1}, // Katakana
		{Lo: 0x3400, Hi: 0x4DBF, Stride: 1}, // CJK Unified Ideographs Extension A
		{Lo: 0x4E00, Hi: 0x9FFF, Stride: 1}, // CJK Unified Ideographs
		{Lo: 0xAC00, Hi: 0xD7A3, Stride: 1}, // Hangul syllables (no conjoining jamo)
	},
}

// CheckNames applies to a skill's folder name and its files' paths
// (slash-separated, relative to the skill folder) the rules [Materialize]
// applies before it writes anything, without writing: every segment a
// portable file name (no Windows device name such as CON or COM1, no
// trailing dot or space, none of the characters Windows reserves, such as
// : and \, no character whose normalisation or case folding is
// undecided), and no two paths that are the same file, or a file and a
// folder, on a case-insensitive or normalising filesystem. The error
// names the skill folder or the path; it wraps [ErrUnsafeName] or
// [ErrNameCollision].
func CheckNames(name string, paths []string) error {
	if err := checkName(name); err != nil {
		return fmt.Errorf("skill folder name: %w", err)
	}
	return checkPaths(paths, paths)
}

// checkPaths checks every segment of paths and their collisions; shown
// names each path in errors about its segments (Materialize shows URIs).
func checkPaths(paths, shown []string) error {
	folded := map[string]string{}
	keys := make([]string, len(paths))
	for i, p := range paths {
		for _, s := range strings.Split(p, "/") {
			if err := checkName(s); err != nil {
				return fmt.Errorf("%s: %w", shown[i], err)
			}
		}
		k := FoldName(p)
		if prev, dup := folded[k]; dup {
			return fmt.Errorf("%w: %q and %q would be the same file on a case-insensitive filesystem; ask the server's maintainer to rename one", ErrNameCollision, prev, p)
		}
		folded[k] = p
		keys[i] = k
	}
	for i, p := range paths {
		// A file may not also be a directory of another file (a/b and a/b/c).
		for j, q := range paths {
			if i != j && strings.HasPrefix(keys[j], keys[i]+"/") {
				return fmt.Errorf("%w: %q is a file, but %q needs it to be a directory", ErrNameCollision, p, q)
			}
		}
	}
	return nil
}

// nameRuneOK reports whether r may appear in a materialized name: printable
// ASCII other than the characters Windows reserves (\ is its path
// separator: a file "a\b" would land in a folder "a"), or an allowlisted letter
// or digit. The letter-or-digit filter drops unassigned code points and the
// few symbols inside the listed blocks; U+30FB (katakana middle dot) is kept
// because Japanese names use it.
func nameRuneOK(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 0x20 && r != 0x7f && !strings.ContainsRune(`<>:"|?*\`, r)
	}
	return unicode.Is(nfcStable, r) && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == 0x30FB)
}

// checkName accepts a name (one path segment) only if every rune passes
// [nameRuneOK]; otherwise it says which rune, where, and why. The name is
// quoted with non-ASCII escaped, since the point is often a rune that looks
// like nothing or like its neighbour.
func checkName(name string) error {
	if err := checkPortable(name); err != nil {
		return err
	}
	const rename = "ask the server's maintainer to rename the file"
	const merge = "so another name could be the same file on a normalising filesystem"
	pos := 0
	for i, r := range name {
		pos++
		if r == utf8.RuneError {
			if _, w := utf8.DecodeRuneInString(name[i:]); w == 1 {
				return fmt.Errorf("%w: %+q has byte 0x%02x at character %d, which is not valid UTF-8 and has no portable file name; %s", ErrUnsafeName, name, name[i], pos, rename)
			}
		}
		if nameRuneOK(r) {
			continue
		}
		var why string
		switch {
		case r < 0x20 || r == 0x7f:
			why = "a control character, which no portable file name holds"
		case r < utf8.RuneSelf:
			return fmt.Errorf("%w: %+q has %U %q at character %d, which Windows does not allow in file names; %s", ErrUnsafeName, name, r, r, pos, rename)
		case unicode.Is(unicode.M, r):
			why = "a combining mark, which Unicode normalisation may merge with the letter before it, " + merge
		case 0x1100 <= r && r <= 0x11FF, 0xA960 <= r && r <= 0xA97F, 0xD7B0 <= r && r <= 0xD7FF:
			why = "a conjoining Hangul jamo, which Unicode normalisation may merge into a syllable, " + merge
		case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp):
			why = "an invisible control, format or bidirectional character, which can disguise the name and which some filesystems ignore when comparing names"
		case unicode.Is(unicode.Co, r):
			why = "a private-use character, whose case and normalisation are undefined"
		default:
			why = "outside the scripts whose Unicode normalisation skillport can check without tables (it may have a canonical equivalent), " + merge
		}
		return fmt.Errorf("%w: %+q has %U at character %d, %s; %s", ErrUnsafeName, name, r, pos, why, rename)
	}
	return nil
}

// checkPortable refuses names that Windows or macOS treat specially, so that
// a pulled skill is the same set of files on every system, and names that
// are an attack path for tools run inside the folder:
//   - Windows device names (CON, PRN, AUX, NUL, COM0–COM9, LPT0–LPT9, also
//     with the superscript digits ¹ ² ³), in any case, alone or before an
//     extension ("nul.txt", "Com1.tar.gz"): opening one opens the device;
//   - a trailing dot or space, which Windows drops ("a.md." is "a.md");
//   - ".git" in any case, and its 8.3 alias "git~1": git would read a
//     pulled folder's ".git" as the repository's own configuration.
func checkPortable(name string) error {
	const rename = "ask the server's maintainer to rename the file"
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("%w: %q is not a file name; %s", ErrUnsafeName, name, rename)
	}
	if strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return fmt.Errorf("%w: %+q ends with a dot or a space, which Windows drops (it would be the same file as %+q); %s", ErrUnsafeName, name, strings.TrimRight(name, ". "), rename)
	}
	lower := strings.ToLower(name)
	if lower == ".git" || lower == "git~1" {
		return fmt.Errorf("%w: %+q is git's repository folder name, and git would obey what a pulled folder puts there; %s", ErrUnsafeName, name, rename)
	}
	stem, _, _ := strings.Cut(lower, ".")
	stem = strings.TrimRight(stem, " ")
	if reservedDevice(stem) {
		return fmt.Errorf("%w: %+q is the Windows device name %s (reserved with any extension, in any case); %s", ErrUnsafeName, name, strings.ToUpper(stem), rename)
	}
	return nil
}

// reservedDevice reports the Windows device names, lower-cased.
func reservedDevice(stem string) bool {
	switch stem {
	case "con", "prn", "aux", "nul":
		return true
	}
	for _, p := range []string{"com", "lpt"} {
		if rest, ok := strings.CutPrefix(stem, p); ok {
			switch rest {
			case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
				return true
			}
		}
	}
	return false
}

// FoldName returns the key under which [Materialize] treats two names (or
// slash-separated paths) as the same file: each rune becomes the smallest
// member of its [unicode.SimpleFold] orbit, ß and ẞ become "ss", and
// dotless ı and dotted İ become i, so that names colliding on APFS, HFS+,
// NTFS or ext4 casefold volumes share a key. It over-detects (a Turkish
// volume would keep I and ı apart) rather than miss a collision. For names
// Materialize accepts, which are their own NFC form, folding is all the
// normalisation needed; other strings are folded rune by rune all the same.
func FoldName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, r := range name {
		switch r {
		case 0x00DF, 0x1E9E: // ß ẞ: full case folding gives "ss"
			b.WriteRune(foldRune('s'))
			b.WriteRune(foldRune('s'))
		case 0x0130, 0x0131: // İ ı: upper- and lower-case to I and i outside Turkish
			b.WriteRune(foldRune('i'))
		default:
			b.WriteRune(foldRune(r))
		}
	}
	return b.String()
}

// foldRune returns the smallest rune of r's simple case-folding orbit.
func foldRune(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}
