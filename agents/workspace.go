package agents

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/runtime/fileerr"
)

// Workspace confines file tools to one directory. Paths are relative to it;
// absolute paths, ".." and symbolic links that leave it are refused (os.Root
// enforces the last one against races too).
type Workspace struct {
	dir    string
	cur    atomic.Pointer[os.Root] // see root
	reopen sync.Mutex
	locks  sync.Map // clean path -> *sync.Mutex, see LockPath
	// protected is read by the tools as they run and added to by Protect,
	// a reload among them: each addition stores a new slice.
	protected   atomic.Pointer[[]protectedPath]
	protectedMu sync.Mutex // held by Protect and Seal
}

// protectedPath is a file or directory of swarmdeck's own that the file
// tools must not change, see Protect.
type protectedPath struct {
	path   string // absolute, symbolic links resolved
	what   string
	sealed bool // not to be opened at all, see Seal
}

// Workspace limits.
const (
	maxPathLen    = 1024
	maxReadBytes  = 256 << 10
	maxWriteBytes = 4 << 20
	maxListItems  = 500
)

// jsonChars is how many characters b takes as a JSON string's content,
// encoded as the runtime encodes tool results (no HTML escaping).
func jsonChars(b []byte) int {
	n := 0
	for _, r := range string(b) {
		n += jsonRuneChars(r)
	}
	return n
}

// jsonRuneChars is how many characters r takes in a JSON string's content.
func jsonRuneChars(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\t' || r == '\r':
		return 2
	case r < 0x20 || r == 0x2028 || r == 0x2029:
		return 6 // \u00XX, as encoding/json escapes them
	}
	return 1
}

// OpenWorkspace opens dir as a workspace.
func OpenWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", abs, err)
	}
	w := &Workspace{dir: abs}
	w.cur.Store(root)
	return w, nil
}

// root is the open workspace directory: the one at Dir when the last tool
// call began (see present).
func (w *Workspace) root() *os.Root { return w.cur.Load() }

// present is the tool error for a workspace directory that is gone
// (removed, or a file in its place), and nil while it is there. The tools
// hold the directory open; in one that was removed every path is missing,
// and without this check a read would say that its file does not exist,
// list_files that "." does not. A directory made again at the workspace's
// path is opened in place of the removed one, so that the tools work again
// once it is back.
func (w *Workspace) present() error {
	fi, err := os.Stat(w.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Errorf("the workspace directory %s has been removed; no file tool can work until it is back (ask the person running the swarm to restore it)", w.dir)
	case err != nil:
		return Errorf("the workspace directory %s cannot be reached (%v); no file tool can work until it can", w.dir, fileerr.Reason(err))
	case !fi.IsDir():
		return Errorf("the workspace directory %s is no longer a directory (%s is in its place); no file tool can work until the directory is back", w.dir, fileerr.Kind(fi.Mode()))
	}
	cur := w.root()
	if open, err := cur.Stat("."); err == nil && os.SameFile(fi, open) {
		return nil
	}
	w.reopen.Lock()
	defer w.reopen.Unlock()
	if w.root() != cur {
		return nil // another call has opened it already
	}
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return Errorf("the workspace directory %s was made again but cannot be opened (%v); no file tool can work until it can", w.dir, fileerr.Reason(err))
	}
	w.cur.Store(root)
	// A call still running in the removed directory fails with
	// fs.ErrClosed, which explain says is worth making again.
	cur.Close()
	return nil
}

// LockPath serialises the tools that write the file at clean (a path from
// Clean) and returns the unlock. edit_file reads a file, changes it and
// writes it whole: two calls changing one file at once (two in one answer
// run concurrently, or two sessions) would each write over the other's
// change, and both would report success.
func (w *Workspace) LockPath(clean string) (unlock func()) {
	m, _ := w.locks.LoadOrStore(clean, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Protect keeps the write tools off the file or directory at p (nothing
// when p is ""): swarmdeck's own configuration, database, log and prompt
// templates, when they lie inside the workspace. An agent that could write
// the configuration file would raise its own limits at the next reload.
// what names it in the tool error. It may be called while the tools run:
// a path set by a reload (prompts_dir) is protected from then on.
func (w *Workspace) Protect(p, what string) { w.protect(p, what, false) }

// Seal is Protect for a file the tools must not even open: swarmdeck's
// database and its -wal, -shm and -journal files. SQLite's locks on a file
// are the process's, and closing any descriptor of the file drops them
// all: a read_file or a search of the database would leave it unlocked
// under the run, for another process to checkpoint and delete its WAL.
func (w *Workspace) Seal(p, what string) { w.protect(p, what, true) }

func (w *Workspace) protect(p, what string, sealed bool) {
	if p == "" {
		return
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return
	}
	pp := protectedPath{path: resolveLoose(abs), what: what, sealed: sealed}
	w.protectedMu.Lock()
	defer w.protectedMu.Unlock()
	old := w.protectedPaths()
	if slices.Contains(old, pp) {
		return // protected already, as a reload finds most paths
	}
	next := append(slices.Clip(old), pp)
	w.protected.Store(&next)
}

// ProtectedNow returns a func that puts the protected paths back as they
// are now, for a change of settings that is refused after their paths
// were protected.
func (w *Workspace) ProtectedNow() (restore func()) {
	w.protectedMu.Lock()
	now := w.protected.Load()
	w.protectedMu.Unlock()
	return func() {
		w.protectedMu.Lock()
		w.protected.Store(now)
		w.protectedMu.Unlock()
	}
}

// protectedPaths are the paths protected now.
func (w *Workspace) protectedPaths() []protectedPath {
	if p := w.protected.Load(); p != nil {
		return *p
	}
	return nil
}

// sealedFile is a sealed path as it is now.
type sealedFile struct {
	info fs.FileInfo
	what string
}

// sealedFiles are the sealed files that exist now.
func (w *Workspace) sealedFiles() []sealedFile {
	var out []sealedFile
	for _, p := range w.protectedPaths() {
		if !p.sealed {
			continue
		}
		if fi, err := os.Stat(p.path); err == nil {
			out = append(out, sealedFile{fi, p.what})
		}
	}
	return out
}

// sealedAs is what sealed file fi is, through any of its names, or "".
func sealedAs(fi fs.FileInfo, sealed []sealedFile) string {
	for _, s := range sealed {
		if os.SameFile(fi, s.info) {
			return s.what
		}
	}
	return ""
}

// refuseSealed is the tool error for opening clean when it is a sealed
// file, under any name. It looks without opening.
func (w *Workspace) refuseSealed(clean string) error {
	sealed := w.sealedFiles()
	if len(sealed) == 0 {
		return nil
	}
	fi, err := w.root().Stat(clean)
	if err != nil {
		return nil // the opening says what is wrong
	}
	if what := sealedAs(fi, sealed); what != "" {
		return Errorf("%s is swarmdeck's own %s, which the file tools leave alone: opening it while swarmdeck runs would release the database's locks", clean, what)
	}
	return nil
}

// refuseProtected is the tool error for writing clean when it is, or lies
// under, a protected path, through symbolic links too.
func (w *Workspace) refuseProtected(clean string) error {
	protected := w.protectedPaths()
	if len(protected) == 0 {
		return nil
	}
	target := resolveLoose(filepath.Join(w.dir, filepath.FromSlash(clean)))
	for _, p := range protected {
		if target == p.path || strings.HasPrefix(target, p.path+string(filepath.Separator)) {
			return Errorf("%s is swarmdeck's own %s, which agents may not change; write your work to another file", clean, p.what)
		}
	}
	// A hard link is another name for the same file: written in place
	// (through a symbolic link to it, say), it would change the protected
	// file under a name that is not its own.
	fi, err := os.Stat(target)
	if err != nil || !fi.Mode().IsRegular() || links(fi) < 2 {
		return nil
	}
	for _, p := range protected {
		if w.sameAsProtected(fi, p.path) {
			return Errorf("%s is another name (a hard link) for swarmdeck's own %s, which agents may not change; write your work to another file", clean, p.what)
		}
	}
	return nil
}

// sameAsProtected reports whether fi is the file at the protected path
// p, or one of the files under it when p is a directory.
func (w *Workspace) sameAsProtected(fi fs.FileInfo, p string) bool {
	pfi, err := os.Stat(p)
	switch {
	case err != nil:
		return false
	case !pfi.IsDir():
		return os.SameFile(fi, pfi)
	}
	found := false
	filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil && os.SameFile(fi, info) {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// resolveLoose resolves the symbolic links of an absolute path whose last
// parts may not exist yet: those of its deepest existing ancestor, with
// the rest joined on as given.
func resolveLoose(p string) string {
	rest := ""
	for dir := p; ; {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// openRegular opens clean without waiting on it (a named pipe would block
// the tool forever) and refuses anything but a regular file or, when
// dirOK, a directory.
func (w *Workspace) openRegular(clean string, flag int, perm fs.FileMode, dirOK bool) (*os.File, fs.FileInfo, error) {
	if err := w.refuseSealed(clean); err != nil {
		return nil, nil, err
	}
	f, err := w.root().OpenFile(clean, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return nil, nil, Errorf("%s is not a regular file (a named pipe or a socket); only regular files can be used", clean)
		}
		return nil, nil, w.explain(clean, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, w.explain(clean, err)
	}
	if !st.Mode().IsRegular() && !(dirOK && st.IsDir()) {
		f.Close()
		if st.IsDir() {
			return nil, nil, Errorf("%s is a directory, not a file", clean)
		}
		return nil, nil, Errorf("%s is not a regular file (%s); only regular files can be used", clean, fileerr.Kind(st.Mode()))
	}
	return f, st, nil
}

// Dir is the absolute workspace directory.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the workspace.
func (w *Workspace) Close() error { return w.root().Close() }

// Clean checks a path given by a model and returns it in slash form
// relative to the workspace.
func (w *Workspace) Clean(p string) (string, error) {
	if len(p) > maxPathLen {
		return "", Errorf("path is %d bytes long; the limit is %d", len(p), maxPathLen)
	}
	if strings.ContainsRune(p, 0) {
		return "", Errorf("path contains a NUL byte")
	}
	if t := strings.TrimSpace(p); t == "" {
		p = "."
	} else if t != p {
		// Trimmed quietly, "a.txt " would name a.txt, another file than
		// the one asked for.
		return "", Errorf("path %q begins or ends with white space; give it without (file names here do not have it)", p)
	}
	if err := checkNameChars(p); err != nil {
		return "", err
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", Errorf("path %q is absolute; give a path relative to the workspace, e.g. \"docs/notes.md\"", p)
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", Errorf("path %q contains \"..\"; paths must stay inside the workspace", p)
		}
	}
	// A backslash separates as a slash does, as the ".." check above
	// takes it: a model that writes Windows paths means directories.
	return path.Clean(strings.ReplaceAll(filepath.ToSlash(p), `\`, "/")), nil
}

// endsInSlash reports whether p, a path given by a model, ends with a
// separator: it names a directory, and a write to it is refused rather
// than made to the file the path names without it.
func endsInSlash(p string) bool {
	return strings.HasSuffix(p, "/") || strings.HasSuffix(p, `\`)
}

// refuseDirPath is the tool error for a file to write or edit (what) given
// as a path that ends with a separator; nil for any other path.
func refuseDirPath(p, what string) error {
	if !endsInSlash(p) {
		return nil
	}
	return Errorf("path %q ends with a slash, which names a directory; give the path of the file to %s, e.g. \"notes/plan.md\"", p, what)
}

// absoluteLink finds the first part of the clean path p that is a
// symbolic link to an absolute path inside the workspace, and where it
// points, relative to the workspace: the file tools refuse those links
// too, and the refusal should not say that the path leads outside. It
// only reads the links.
func (w *Workspace) absoluteLink(p string) (link, inside string, ok bool) {
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := w.root().Lstat(sub)
		if err != nil {
			return "", "", false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		t, err := w.root().Readlink(sub)
		if err != nil || !filepath.IsAbs(t) {
			return "", "", false
		}
		rel, err := filepath.Rel(resolveLoose(w.dir), resolveLoose(t))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", "", false
		}
		return sub, filepath.ToSlash(filepath.Join(rel, filepath.FromSlash(strings.Join(parts[i+1:], "/")))), true
	}
	return "", "", false
}

// checkNameChars refuses a path with characters that make a file name
// read as something else than it is: control characters (a line break, an
// escape sequence), the bidirectional controls that reorder text, and the
// other format characters, which show as nothing ("con\u200bfig.yaml"
// reads as config.yaml but is another file). The zero-width joiner and
// non-joiner are taken where they do their work (see joins).
func checkNameChars(p string) error {
	if !utf8.ValidString(p) {
		return Errorf("path %q is not valid UTF-8", p)
	}
	if strings.ContainsRune(p, utf8.RuneError) {
		// What stands for bytes that were not UTF-8 on the way: the name
		// written would not be the one meant.
		return Errorf("path %q contains U+FFFD, which stands for bytes that were not valid UTF-8; file names may not", p)
	}
	prev := rune(0)
	for i, r := range p {
		before := prev
		prev = r
		switch {
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			return Errorf("path %q contains a control character (U+%04X); file names may not", p, r)
		case r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c:
			return Errorf("path %q contains a bidirectional control character (U+%04X), which makes a name read as another; file names may not", p, r)
		case (r == 0x200c || r == zwj) && joins(r, before, p[i+utf8.RuneLen(r):]):
		case unicode.Is(unicode.Cf, r):
			return Errorf("path %q contains an invisible format character (U+%04X), which makes a name read as another; file names may not", p, r)
		}
	}
	return nil
}

// joins reports whether the zero-width joiner or non-joiner r, after the
// rune before and followed by rest, does the work it is for: the joiner
// between two emoji (👩‍💻, ❤️‍🔥), either between two letters of a script
// that shapes its letters by them (Persian and Arabic, the scripts of
// India). Anywhere else it only hides: 日\u200d本 reads as 日本.
func joins(r, before rune, rest string) bool {
	after, _ := utf8.DecodeRuneInString(rest)
	emoji := func(c rune) bool { return unicode.Is(unicode.So, c) }
	if r == zwj && emoji(after) && (emoji(before) || before == 0xfe0f || before >= 0x1f3fb && before <= 0x1f3ff) {
		return true
	}
	return shapedByJoiners(before) && shapedByJoiners(after)
}

// shapedByJoiners reports a character of a script whose letters the
// joiners change the shape of.
func shapedByJoiners(c rune) bool {
	return unicode.In(c, unicode.Arabic, unicode.Syriac, unicode.Nko, unicode.Mongolian, unicode.Devanagari, unicode.Bengali,
		unicode.Gurmukhi, unicode.Gujarati, unicode.Oriya, unicode.Tamil, unicode.Telugu, unicode.Kannada, unicode.Malayalam, unicode.Sinhala)
}

const zwj = '\u200d'

// explain rewrites file system errors into tool errors.
func (w *Workspace) explain(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		if gone := w.present(); gone != nil {
			return gone
		}
		return Errorf("%s does not exist in the workspace (use list_files to see what is there)", p)
	case errors.Is(err, fs.ErrClosed):
		// The workspace directory was made again while this call ran in
		// the removed one (see present).
		return Errorf("%s: the workspace directory was replaced while the call ran; make the call again", p)
	case errors.Is(err, fs.ErrPermission):
		return Errorf("%s: permission denied", p)
	case strings.Contains(err.Error(), "escapes from parent") || strings.Contains(err.Error(), "path escapes"):
		if link, inside, ok := w.absoluteLink(p); ok {
			return Errorf("%s goes through %s, a symbolic link that names its target by an absolute path, which the file tools do not follow; it points to %s in the workspace: use that path", p, link, inside)
		}
		return Errorf("%s leads outside the workspace (through a symbolic link); only files inside the workspace can be used", p)
	case strings.Contains(err.Error(), "is a directory"):
		return Errorf("%s is a directory, not a file", p)
	case strings.Contains(err.Error(), "not a directory"):
		return Errorf("%s: a part of the path is not a directory", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return Errorf("%s: %v", p, pe.Err)
	}
	return Errorf("%s: %v", p, err)
}

// FileContent is the result of read_file.
type FileContent struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	StartLine  int    `json:"start_line"`
	Lines      int    `json:"lines"`
	TotalLines int    `json:"total_lines"`
	Truncated  bool   `json:"truncated"`
	NextOffset int    `json:"next_offset,omitempty"` // where to go on reading, when truncated
	// LineEndings is "crlf" when lines end in CR LF; the content shows
	// them as LF.
	LineEndings string `json:"line_endings,omitempty"`
	// LineCut is the number of a line too long to be shown whole, whose
	// start the content shows: the only line, the first asked for.
	LineCut int `json:"line_cut,omitempty"`
}

// cutJSONChars is the longest start of b, whole runes, that takes at most
// max characters as a JSON string's content (see jsonChars).
func cutJSONChars(b []byte, max int) []byte {
	n := 0
	for i, r := range string(b) {
		w := jsonRuneChars(r)
		if n+w > max {
			return b[:i]
		}
		n += w
	}
	return b
}

// lineReader reads a file a line at a time, each without its LF (a CR
// before it is kept, so that Read can tell which line endings a file
// has), whatever its length: of a line longer than keep bytes only the
// first keep are returned.
type lineReader struct {
	r     *bufio.Reader
	keep  int
	buf   []byte
	cut   bool  // the last line was longer than keep
	total int64 // bytes read
}

// next is the next line, valid until the next call; io.EOF after the
// last.
func (l *lineReader) next() ([]byte, error) {
	l.buf = l.buf[:0]
	l.cut = false
	read := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		read = read || len(chunk) > 0
		l.total += int64(len(chunk))
		if len(chunk) > 0 && len(l.buf)+len(bytes.TrimSuffix(chunk, []byte("\n"))) > l.keep {
			l.cut = true
		}
		if room := l.keep - len(l.buf); room > 0 {
			l.buf = append(l.buf, chunk[:min(len(chunk), room)]...)
		}
		switch {
		case err == nil:
			if n := len(l.buf); n > 0 && l.buf[n-1] == '\n' {
				l.buf = l.buf[:n-1]
			}
			return l.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && read:
			return l.buf, nil // the last line, without a line break
		}
		return nil, err
	}
}

// Read reads a text file, from line offset (1-based) for at most limit lines.
func (w *Workspace) Read(p string, offset, limit int) (*FileContent, error) {
	return w.ReadWithin(p, offset, limit, 0)
}

// ReadWithin is Read with the content bounded to budget characters as
// JSON encodes it (0: no bound beyond the workspace's own): whole lines
// only, and NextOffset says where the rest starts.
func (w *Workspace) ReadWithin(p string, offset, limit, budget int) (*FileContent, error) {
	clean, err := w.Clean(p)
	if err != nil {
		return nil, err
	}
	if err := w.present(); err != nil {
		return nil, err
	}
	f, st, err := w.openRegular(clean, os.O_RDONLY, 0, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.IsDir() {
		return nil, Errorf("%s is a directory; use list_files to see its entries", clean)
	}
	if endsInSlash(p) {
		return nil, Errorf("%s is a file, not a directory; give its path without the slash at the end to read it", clean)
	}
	if offset < 1 {
		offset = 1
	}
	if limit <= 0 {
		limit = 2000
	}
	out := &FileContent{Path: clean, StartLine: offset}
	var buf strings.Builder
	// A line longer than a read shows is kept only as far as it could be
	// shown, and a little more, so that it is known to be longer (and a
	// rune cut at the end falls outside what is shown).
	r := bufio.NewReaderSize(f, 64<<10)
	if head, _ := r.Peek(binarySniff); bytes.IndexByte(head, 0) >= 0 {
		return nil, Errorf("%s is not a text file", clean)
	}
	lines := lineReader{r: r, keep: maxReadBytes + utf8.UTFMax}
	// Every line is checked, not only those shown: search_files and
	// edit_file take a file for text or not as a whole, and so does this.
	var text textCheck
	line, encoded := 0, 0
	for {
		b, err := lines.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, w.explain(clean, err)
		}
		line++
		if text.line(line, b, lines.cut); text.nul > 0 {
			return nil, text.err(clean)
		}
		if n := len(b); n > 0 && b[n-1] == '\r' {
			// Shown without its CR: edit_file matches either way.
			b = b[:n-1]
			out.LineEndings = "crlf"
		}
		if line < offset {
			continue
		}
		n := jsonChars(b) + 2 // and its line break, as \n
		// Once a line is left out, so are the ones after it: the content
		// is one stretch of lines, and next_offset where it stops.
		if out.Truncated || out.Lines >= limit || buf.Len()+len(b) > maxReadBytes || (budget > 0 && encoded+n > budget) {
			if out.Lines == 0 && !out.Truncated && out.Lines < limit {
				// The first line alone is longer than what fits (minified
				// code, JSON on one line): its start is shown, cut, and the
				// reading goes on after it. Sent on whole, it could never
				// be read.
				room := maxReadBytes
				if budget > 0 {
					room = min(room, budget-2)
				}
				// The reader may have cut the line inside a character.
				head := trimPartialRune(cutJSONChars(b, room))
				buf.Write(head)
				buf.WriteByte('\n')
				out.Lines, out.LineCut = 1, line
				out.Truncated, out.NextOffset = true, line+1
				encoded += jsonChars(head) + 2
				continue
			}
			if !out.Truncated {
				out.Truncated, out.NextOffset = true, line
			}
			continue
		}
		buf.Write(b)
		buf.WriteByte('\n')
		out.Lines++
		encoded += n
	}
	if err := text.err(clean); err != nil {
		return nil, err
	}
	out.TotalLines = line
	out.Content = buf.String()
	return out, nil
}

// textCheck follows the lines of a file to tell whether it is text that
// the file tools use: UTF-8, without NUL bytes. read_file, edit_file and
// search_files take a file for text or not as a whole, and say the same
// of it.
type textCheck struct {
	nul     int // the first line with a NUL byte (binary data), 0 if none
	invalid int // the first line that is not UTF-8, 0 if none
}

// line checks line n, b; when cut, b is only the line's start, whose last
// rune may be cut short.
func (c *textCheck) line(n int, b []byte, cut bool) {
	if c.nul == 0 && bytes.IndexByte(b, 0) >= 0 {
		c.nul = n
	}
	if c.invalid > 0 {
		return
	}
	if cut {
		b = trimPartialRune(b)
	}
	if !utf8.Valid(b) {
		c.invalid = n
	}
}

// trimPartialRune is b without the start of a rune that a cut left at
// its end.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// err is the tool error for the file clean once its lines are checked;
// nil when it is text. A NUL byte makes it binary whatever else it holds.
func (c *textCheck) err(clean string) error {
	switch {
	case c.nul > 0:
		return Errorf("%s is not a text file", clean)
	case c.invalid > 0:
		return Errorf("%s is not UTF-8 text (line %d is not: another encoding, such as Latin-1?); the file tools read and change UTF-8 text only", clean, c.invalid)
	}
	return nil
}

// Entry is one item of list_files.
type Entry struct {
	Name string `json:"name"`
	Type string `json:"type"` // file, dir, symlink, other (a named pipe, a socket, a device)
	Size int64  `json:"size,omitempty"`
}

// Listing is the result of list_files.
type Listing struct {
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated,omitempty"`
}

// skipDir names directories not worth walking into.
func skipDir(name string) bool {
	switch name {
	case ".git", "node_modules", ".hg", ".svn", "vendor", "__pycache__", ".venv":
		return true
	}
	return false
}

// List lists a directory, or a tree when recursive.
func (w *Workspace) List(p string, recursive bool, limit int) (*Listing, error) {
	clean, err := w.Clean(p)
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > maxListItems {
		limit = maxListItems
	}
	if err := w.present(); err != nil {
		return nil, err
	}
	st, err := w.root().Stat(clean)
	if errors.Is(err, fs.ErrNotExist) {
		// Not the advice that explain gives: this is list_files.
		if gone := w.present(); gone != nil {
			return nil, gone
		}
		return nil, Errorf("%s does not exist in the workspace; the deepest directory on that path that does is %s", clean, w.deepestDir(clean))
	}
	if err != nil {
		return nil, w.explain(clean, err)
	}
	if !st.IsDir() {
		return nil, Errorf("%s is a file, not a directory; use read_file to read it", clean)
	}
	out := &Listing{Path: clean, Entries: []Entry{}}
	fsys := w.root().FS()
	err = fs.WalkDir(fsys, clean, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == clean {
				return err
			}
			return nil
		}
		if name == clean {
			return nil
		}
		if d.Type().IsRegular() && isTemp(d.Name()) {
			return nil // a write's, cut short by a kill
		}
		if len(out.Entries) >= limit {
			out.Truncated = true
			return fs.SkipAll
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(name, clean), "/")
		if clean == "." {
			rel = name
		}
		e := Entry{Name: rel, Type: "file"}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			e.Type = "symlink"
		case d.IsDir():
			e.Type = "dir"
		case !d.Type().IsRegular():
			// A named pipe, a socket, a device: the file tools refuse
			// them, and the listing says so before a call fails.
			e.Type = "other"
		default:
			if info, err := d.Info(); err == nil {
				e.Size = info.Size()
			}
		}
		out.Entries = append(out.Entries, e)
		if d.IsDir() && (!recursive || skipDir(d.Name())) {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, w.explain(clean, err)
	}
	sort.SliceStable(out.Entries, func(i, j int) bool { return out.Entries[i].Name < out.Entries[j].Name })
	return out, nil
}

// deepestDir is the longest start of the clean path p that is a
// directory in the workspace, "." when no longer one is.
func (w *Workspace) deepestDir(p string) string {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if fi, err := w.root().Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return "."
}

// Match is one hit of search_files.
type Match struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// SearchResult is the result of search_files.
type SearchResult struct {
	Query     string  `json:"query"`
	Matches   []Match `json:"matches"`
	Files     int     `json:"files_searched"`
	Truncated bool    `json:"truncated,omitempty"`
	// Skipped are the files that were not searched, or not to their end,
	// and why: a search that says nothing of them would read as "not
	// found" where nothing was looked at.
	Skipped     []SkippedFile `json:"skipped,omitempty"`
	MoreSkipped int           `json:"more_skipped,omitempty"` // beyond those listed
}

// SkippedFile is a file search_files did not search, or not whole.
type SkippedFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Search limits. A file is read a line at a time, so memory stays bounded
// whatever its size; the limits bound the time a search takes.
const (
	maxSearchFile  = 64 << 20  // bytes of one file
	maxSearchBytes = 256 << 20 // bytes of all the files of one search
	maxSearchLine  = 1 << 20   // bytes of one line
	maxSkipped     = 20        // files listed as skipped
	// binarySniff is how much of a file's start is looked at for a NUL
	// byte, which makes it binary (as git tells).
	binarySniff = 8000
)

// matchShown is how many characters of a matching line a search shows.
const matchShown = 200

// Search finds lines containing query (case-insensitive) in text files
// under p that match glob (if given, see globMatch).
func (w *Workspace) Search(query, p, glob string, limit int) (*SearchResult, error) {
	if strings.TrimSpace(query) == "" {
		return nil, Errorf("query must not be empty")
	}
	clean, err := w.Clean(p)
	if err != nil {
		return nil, err
	}
	if glob, err = cleanGlob(glob); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	if err := w.present(); err != nil {
		return nil, err
	}
	s := &search{needle: []byte(strings.ToLower(query)), limit: limit, out: &SearchResult{Query: query, Matches: []Match{}}}
	fsys := w.root().FS()
	sealed := w.sealedFiles()
	err = fs.WalkDir(fsys, clean, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == clean {
				return err
			}
			return nil
		}
		if d.IsDir() {
			if name != clean && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || isTemp(d.Name()) {
			return nil
		}
		if glob != "" && !globMatch(glob, name) {
			return nil
		}
		if len(sealed) > 0 {
			if fi, err := d.Info(); err == nil {
				if what := sealedAs(fi, sealed); what != "" {
					s.skip(name, "it is swarmdeck's own %s, which the file tools leave alone", what)
					return nil
				}
			}
		}
		return s.file(fsys, name, name == clean)
	})
	if err != nil {
		return nil, w.explain(clean, err)
	}
	return s.out, nil
}

// cleanGlob checks a glob given to search_files and returns it as
// globMatch takes it.
func cleanGlob(glob string) (string, error) {
	if glob == "" {
		return "", nil
	}
	if _, err := path.Match(glob, "x"); err != nil {
		return "", Errorf("glob %q is not a valid pattern: %v", glob, err)
	}
	if strings.HasPrefix(glob, "/") {
		return "", Errorf("glob %q is absolute; a glob with a slash matches paths from the workspace's top, e.g. \"src/**/*.go\"", glob)
	}
	g := strings.TrimPrefix(glob, "./")
	if strings.HasSuffix(g, "/") {
		g += "**" // a directory: every file under it
	}
	return g, nil
}

// globMatch reports whether the file name, a slash path from the
// workspace's top, matches glob. A glob without a slash matches the base
// name ("*.go" matches src/main.go); one with a slash matches the whole
// path, with a part "**" standing for any number of directories
// ("src/**/*.go" matches src/main.go and src/a/b/c.go).
func globMatch(glob, name string) bool {
	if !strings.Contains(glob, "/") {
		ok, _ := path.Match(glob, path.Base(name))
		return ok
	}
	return matchParts(strings.Split(glob, "/"), strings.Split(name, "/"))
}

// matchParts matches the parts of a path to those of a glob.
func matchParts(glob, name []string) bool {
	for len(glob) > 0 {
		if glob[0] == "**" {
			for len(glob) > 1 && glob[1] == "**" {
				glob = glob[1:]
			}
			for i := 0; i <= len(name); i++ {
				if matchParts(glob[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(glob[0], name[0]); !ok {
			return false
		}
		glob, name = glob[1:], name[1:]
	}
	return len(name) == 0
}

// search is the state of one search_files call.
type search struct {
	needle []byte // lower case
	limit  int
	read   int64 // bytes of all files so far, see maxSearchBytes
	out    *SearchResult
}

// skip records that the file name was not searched, or not whole.
func (s *search) skip(name, reason string, args ...any) {
	if len(s.out.Skipped) >= maxSkipped {
		s.out.MoreSkipped++
		return
	}
	s.out.Skipped = append(s.out.Skipped, SkippedFile{Path: name, Reason: fmt.Sprintf(reason, args...)})
}

// file searches the file name, a line at a time; named says that the
// search was asked for this file alone, whose being binary is then worth
// saying. It returns fs.SkipAll once the matches are over the limit.
func (s *search) file(fsys fs.FS, name string, named bool) error {
	f, err := fsys.Open(name)
	if err != nil {
		s.skip(name, "cannot be read: %v", fileerr.Reason(err))
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		s.skip(name, "cannot be read: %v", fileerr.Reason(err))
		return nil
	}
	switch {
	case st.Size() > maxSearchFile:
		s.skip(name, "it is %d bytes, over the %d MiB that a search reads of a file; read it in parts with read_file (offset, limit)", st.Size(), maxSearchFile>>20)
		return nil
	case s.read+st.Size() > maxSearchBytes:
		s.skip(name, "this search had read %d MiB of files already; search this file by giving its path", maxSearchBytes>>20)
		return nil
	}
	r := bufio.NewReaderSize(f, 64<<10)
	if head, _ := r.Peek(binarySniff); bytes.IndexByte(head, 0) >= 0 {
		if named {
			s.skip(name, "it is not a text file")
		}
		return nil
	}
	lines := lineReader{r: r, keep: maxSearchLine}
	// The file's matches are kept back until it is known to be text as a
	// whole: read_file would refuse to show the lines of one that is not.
	// It is read to its end for that, past the limit of matches too.
	var (
		text  textCheck
		found []Match
		over  bool // more matches than the limit leaves room for
		long  int  // the first line longer than maxSearchLine
	)
	for line := 1; ; line++ {
		b, err := lines.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			s.skip(name, "reading it stopped at line %d: %v", line, fileerr.Reason(err))
			break
		}
		if text.line(line, b, lines.cut); text.nul > 0 {
			break
		}
		if lines.cut && long == 0 {
			long = line
		}
		if text.invalid > 0 || !bytes.Contains(bytes.ToLower(b), s.needle) {
			continue
		}
		if len(s.out.Matches)+len(found) >= s.limit {
			over = true
			continue
		}
		found = append(found, Match{Path: name, Line: line, Text: shownText(b)})
	}
	s.read += lines.total
	switch {
	case text.nul > 0:
		s.skip(name, "it is not a text file (line %d holds a NUL byte)", text.nul)
		return nil
	case text.invalid > 0:
		s.skip(name, "it is not UTF-8 text (line %d is not: another encoding, such as Latin-1?), which read_file cannot show either", text.invalid)
		return nil
	case long > 0:
		s.skip(name, "line %d is longer than %d MiB; only its start was searched", long, maxSearchLine>>20)
	}
	s.out.Files++
	s.out.Matches = append(s.out.Matches, found...)
	if over {
		s.out.Truncated = true
		return fs.SkipAll
	}
	return nil
}

// shownText is a matching line as a search shows it: without the white
// space around it, cut at matchShown characters.
func shownText(line []byte) string {
	t := bytes.TrimSpace(line)
	for i, n := 0, 0; i < len(t); n++ {
		if n == matchShown {
			return string(t[:i]) + "…"
		}
		_, size := utf8.DecodeRune(t[i:])
		i += size
	}
	return string(t)
}

// WriteResult is the result of write_file and edit_file.
type WriteResult struct {
	Path         string `json:"path"`
	Bytes        int    `json:"bytes"`
	Created      bool   `json:"created,omitempty"`
	Replacements int    `json:"replacements,omitempty"`
}

// Write writes content to p, creating directories as needed.
func (w *Workspace) Write(p string, content []byte) (*WriteResult, error) {
	clean, err := w.Clean(p)
	if err != nil {
		return nil, err
	}
	if clean == "." {
		return nil, Errorf("give a file path to write, e.g. \"notes/plan.md\"")
	}
	if err := refuseDirPath(p, "write"); err != nil {
		return nil, err
	}
	if len(content) > maxWriteBytes {
		return nil, Errorf("the file would be %d bytes; files written here are limited to %d (4 MiB): split the content over several files", len(content), maxWriteBytes)
	}
	if err := w.present(); err != nil {
		return nil, err
	}
	if err := w.refuseProtected(clean); err != nil {
		return nil, err
	}
	created := false
	mode := fs.FileMode(0o644)
	fi, err := w.root().Lstat(clean)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err == nil && fi.Mode().IsRegular():
		mode = fi.Mode().Perm()
	case err == nil && fi.IsDir():
		return nil, Errorf("%s is a directory; give a file path to write", clean)
	case err == nil && fi.Mode()&fs.ModeSymlink == 0:
		return nil, Errorf("%s is not a regular file (%s); only regular files can be written", clean, fileerr.Kind(fi.Mode()))
	case errors.Is(err, syscall.ENOTDIR):
		return nil, w.notADirectory(clean)
	}
	if dir := path.Dir(clean); dir != "." {
		if err := w.root().MkdirAll(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil, w.notADirectory(clean)
			}
			return nil, w.explain(clean, err)
		}
	}
	if !created && (err != nil || !fi.Mode().IsRegular()) {
		// A symbolic link (inside the workspace) is written through, as
		// before; renaming over it would replace the link itself.
		return w.writeInPlace(clean, content, created)
	}
	if !created {
		// The rename below needs only the directory to be writable. The
		// file's own permission is asked first, as a write in place would
		// ask it: a file the person made read-only keeps agents off it.
		probe, err := w.root().OpenFile(clean, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return nil, Errorf("%s may not be written: permission denied (it is read-only, or not swarmdeck's user's to change); leave it as it is, or write your work to another file", clean)
			}
			return nil, w.explain(clean, err)
		}
		probe.Close()
		// A file with other names (hard links), or another user's, is
		// written in place: a new file renamed over it would leave the
		// other names on the old content, or change its owner.
		if links(fi) > 1 || foreign(fi) {
			return w.writeInPlace(clean, content, created)
		}
	}
	// Write a temporary file beside the target and rename it over: a
	// process killed mid-write leaves the old content or the new, never an
	// empty or half-written file (a re-run after a crash then repeats the
	// recorded write, and replaces the temporary file left).
	tmp, f, err := w.createTemp(clean, mode)
	if err != nil {
		return nil, w.explain(clean, err)
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.root().Rename(tmp, clean)
	}
	if err != nil {
		w.root().Remove(tmp)
		return nil, w.explain(clean, err)
	}
	return &WriteResult{Path: clean, Bytes: len(content), Created: created}, nil
}

// tempPrefix and tempSuffix enclose the name of the file a write goes to
// before it is renamed over its target. Such a file is left only by a
// process killed mid-write; list_files and search_files leave it out.
const (
	tempPrefix = ".swarmdeck-"
	tempSuffix = ".tmp"
	// staleTemp is the age from which a temporary file found in the way is
	// taken for one left by a killed process (a younger one may be another
	// process's, writing the same file right now).
	staleTemp = time.Minute
)

func isTemp(name string) bool {
	return strings.HasPrefix(name, tempPrefix) && strings.HasSuffix(name, tempSuffix)
}

// createTemp creates the temporary file for a write of clean, beside it.
// Its name comes from clean's, so the repeat of a write that a kill cut
// short finds and replaces what that one left; it is short whatever
// clean's is, as a name near the file system's limit of 255 bytes would
// not fit a longer one. This process's writes of one file do not meet
// here (LockPath); where the name is taken all the same, a random one is
// used.
func (w *Workspace) createTemp(clean string, mode fs.FileMode) (string, *os.File, error) {
	h := fnv.New64a()
	h.Write([]byte(clean))
	tmp := path.Join(path.Dir(clean), tempPrefix+strconv.FormatUint(h.Sum64(), 36)+tempSuffix)
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	f, err := w.root().OpenFile(tmp, flags, mode)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := w.root().Lstat(tmp); serr == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleTemp {
			w.root().Remove(tmp)
		} else {
			tmp = path.Join(path.Dir(clean), tempPrefix+strconv.FormatUint(rand.Uint64(), 36)+tempSuffix)
		}
		f, err = w.root().OpenFile(tmp, flags, mode)
	}
	return tmp, f, err
}

// notADirectory is the tool error for a path to write that goes through a
// file as if it were a directory ("notes.md/plan.md").
func (w *Workspace) notADirectory(clean string) error {
	for d := path.Dir(clean); d != "."; d = path.Dir(d) {
		if fi, err := w.root().Lstat(d); err == nil && !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 {
			return Errorf("%s cannot be written: %s is a file, not a directory, so it cannot hold other files", clean, d)
		}
	}
	return Errorf("%s cannot be written: a part of its path is not a directory", clean)
}

// writeInPlace truncates and rewrites the file clean.
func (w *Workspace) writeInPlace(clean string, content []byte, created bool) (*WriteResult, error) {
	f, _, err := w.openRegular(clean, os.O_WRONLY|os.O_CREATE, 0o644, false)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, w.explain(clean, err)
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return nil, w.explain(clean, err)
	}
	if err := f.Close(); err != nil {
		return nil, w.explain(clean, err)
	}
	return &WriteResult{Path: clean, Bytes: len(content), Created: created}, nil
}

// PlanEdit computes the content of p after replacing old with new (every
// occurrence when all, else exactly one must exist).
func (w *Workspace) PlanEdit(p, old, new string, all bool) (string, []byte, int, error) {
	clean, err := w.Clean(p)
	if err != nil {
		return "", nil, 0, err
	}
	if old == "" {
		return "", nil, 0, Errorf("old_string must not be empty; to write a whole file use write_file")
	}
	if err := refuseDirPath(p, "edit"); err != nil {
		return "", nil, 0, err
	}
	if err := w.present(); err != nil {
		return "", nil, 0, err
	}
	if err := w.refuseProtected(clean); err != nil {
		return "", nil, 0, err
	}
	f, st, err := w.openRegular(clean, os.O_RDONLY, 0, false)
	if err != nil {
		return "", nil, 0, err
	}
	if st.Size() > maxWriteBytes {
		f.Close()
		return "", nil, 0, tooLargeToEdit(clean, st.Size())
	}
	// Bounded all the same: the file may grow while it is read.
	data, err := io.ReadAll(io.LimitReader(f, maxWriteBytes+1))
	f.Close()
	if err != nil {
		return "", nil, 0, w.explain(clean, err)
	}
	if len(data) > maxWriteBytes {
		return "", nil, 0, tooLargeToEdit(clean, int64(len(data)))
	}
	// What read_file refuses to show is not edited either: a replacement
	// in a binary file would damage it.
	var text textCheck
	for i, line := range bytes.Split(data, []byte("\n")) {
		text.line(i+1, line, false)
	}
	if err := text.err(clean); err != nil {
		return "", nil, 0, err
	}
	n := bytes.Count(data, []byte(old))
	if n == 0 && bytes.Contains(data, []byte("\r\n")) && strings.Contains(old, "\n") && !strings.Contains(old, "\r") {
		// read_file shows a CR LF file's lines with LF: match the text as
		// shown, and keep the file's line endings in what replaces it.
		crlf := strings.ReplaceAll(old, "\n", "\r\n")
		if n = bytes.Count(data, []byte(crlf)); n > 0 {
			old, new = crlf, strings.ReplaceAll(new, "\n", "\r\n")
		}
	}
	switch {
	case n == 0:
		return "", nil, 0, Errorf("old_string was not found in %s; read the file again and copy the exact text, including spaces", clean)
	case n > 1 && !all:
		return "", nil, 0, Errorf("old_string occurs %d times in %s; include more surrounding text to make it unique, or set replace_all to true", n, clean)
	}
	if !all {
		n = 1
	}
	edited := bytes.Replace(data, []byte(old), []byte(new), n)
	if len(edited) > maxWriteBytes {
		return "", nil, 0, Errorf("the edit would make %s %d bytes; files written here are limited to %d (4 MiB): make new_string shorter, or move part of the file to another file", clean, len(edited), maxWriteBytes)
	}
	return clean, edited, n, nil
}

// tooLargeToEdit is the tool error for editing the file clean of size
// bytes, over what the file tools write: the whole file would have to be
// read and written again.
func tooLargeToEdit(clean string, size int64) error {
	return Errorf("%s is %d bytes, over the %d (4 MiB) that the file tools write, so edit_file cannot change it; read it in parts with read_file (offset, limit), and write what you make of it to another file", clean, size, maxWriteBytes)
}
