package agents

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Workspace confines file tools to one directory. Paths are relative to it;
// absolute paths, ".." and symbolic links that leave it are refused (os.Root
// enforces the last one against races too).
type Workspace struct {
	dir   string
	root  *os.Root
	locks sync.Map // clean path -> *sync.Mutex, see LockPath
}

// Workspace limits.
const (
	maxPathLen    = 1024
	maxReadBytes  = 256 << 10
	maxWriteBytes = 4 << 20
	maxListItems  = 500
	maxSearchFile = 1 << 20
)

// jsonChars is how many characters b takes as a JSON string's content,
// encoded as the runtime encodes tool results (no HTML escaping).
func jsonChars(b []byte) int {
	n := 0
	for _, r := range string(b) {
		switch {
		case r == '"' || r == '\\' || r == '\t' || r == '\r':
			n += 2
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			n += 6 // \u00XX, as encoding/json escapes them
		default:
			n++
		}
	}
	return n
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
	return &Workspace{dir: abs, root: root}, nil
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

// Dir is the absolute workspace directory.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the workspace.
func (w *Workspace) Close() error { return w.root.Close() }

// Clean checks a path given by a model and returns it in slash form
// relative to the workspace.
func (w *Workspace) Clean(p string) (string, error) {
	if len(p) > maxPathLen {
		return "", Errorf("path is %d bytes long; the limit is %d", len(p), maxPathLen)
	}
	if strings.ContainsRune(p, 0) {
		return "", Errorf("path contains a NUL byte")
	}
	p = strings.TrimSpace(p)
	if p == "" {
		p = "."
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", Errorf("path %q is absolute; give a path relative to the workspace, e.g. \"docs/notes.md\"", p)
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", Errorf("path %q contains \"..\"; paths must stay inside the workspace", p)
		}
	}
	return path.Clean(filepath.ToSlash(p)), nil
}

// explain rewrites file system errors into tool errors.
func (w *Workspace) explain(p string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return Errorf("%s does not exist in the workspace (use list_files to see what is there)", p)
	case errors.Is(err, fs.ErrPermission):
		return Errorf("%s: permission denied", p)
	case strings.Contains(err.Error(), "escapes from parent") || strings.Contains(err.Error(), "path escapes"):
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
	f, err := w.root.Open(clean)
	if err != nil {
		return nil, w.explain(clean, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, w.explain(clean, err)
	}
	if st.IsDir() {
		return nil, Errorf("%s is a directory; use list_files to see its entries", clean)
	}
	if offset < 1 {
		offset = 1
	}
	if limit <= 0 {
		limit = 2000
	}
	out := &FileContent{Path: clean, StartLine: offset}
	var buf strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line, encoded := 0, 0
	for sc.Scan() {
		line++
		if line < offset {
			continue
		}
		b := sc.Bytes()
		n := jsonChars(b) + 2 // and its line break, as \n
		if out.Lines >= limit || buf.Len()+len(b) > maxReadBytes || (budget > 0 && encoded+n > budget) {
			if !out.Truncated {
				out.Truncated, out.NextOffset = true, line
			}
			continue
		}
		if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
			return nil, Errorf("%s is not a text file", clean)
		}
		buf.Write(b)
		buf.WriteByte('\n')
		out.Lines++
		encoded += n
	}
	if err := sc.Err(); err != nil {
		return nil, Errorf("%s: %v (is it a text file?)", clean, err)
	}
	out.TotalLines = line
	out.Content = buf.String()
	return out, nil
}

// Entry is one item of list_files.
type Entry struct {
	Name string `json:"name"`
	Type string `json:"type"` // file, dir, symlink
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
	st, err := w.root.Stat(clean)
	if err != nil {
		return nil, w.explain(clean, err)
	}
	if !st.IsDir() {
		return nil, Errorf("%s is a file, not a directory; use read_file to read it", clean)
	}
	out := &Listing{Path: clean, Entries: []Entry{}}
	fsys := w.root.FS()
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
}

// matchShown is how many characters of a matching line a search shows.
const matchShown = 200

// Search finds lines containing query (case-insensitive) in text files
// under p whose base name matches glob (if given).
func (w *Workspace) Search(query, p, glob string, limit int) (*SearchResult, error) {
	if strings.TrimSpace(query) == "" {
		return nil, Errorf("query must not be empty")
	}
	clean, err := w.Clean(p)
	if err != nil {
		return nil, err
	}
	if glob != "" {
		if _, err := path.Match(glob, "x"); err != nil {
			return nil, Errorf("glob %q is not a valid pattern: %v", glob, err)
		}
	}
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	needle := []byte(strings.ToLower(query))
	out := &SearchResult{Query: query, Matches: []Match{}}
	fsys := w.root.FS()
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
		if !d.Type().IsRegular() {
			return nil
		}
		if glob != "" {
			if ok, _ := path.Match(glob, d.Name()); !ok {
				return nil
			}
		}
		info, err := d.Info()
		if err != nil || info.Size() > maxSearchFile {
			return nil
		}
		f, err := fsys.Open(name)
		if err != nil {
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(f, maxSearchFile))
		f.Close()
		if err != nil || bytes.IndexByte(data, 0) >= 0 {
			return nil
		}
		out.Files++
		for i, line := range bytes.Split(data, []byte("\n")) {
			if bytes.Contains(bytes.ToLower(line), needle) {
				if len(out.Matches) >= limit {
					out.Truncated = true
					return fs.SkipAll
				}
				text := strings.TrimSpace(string(line))
				if utf8.RuneCountInString(text) > matchShown {
					text = string([]rune(text)[:matchShown]) + "…"
				}
				out.Matches = append(out.Matches, Match{Path: name, Line: i + 1, Text: text})
			}
		}
		return nil
	})
	if err != nil {
		return nil, w.explain(clean, err)
	}
	return out, nil
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
	if len(content) > maxWriteBytes {
		return nil, Errorf("content is %d bytes; the limit is %d", len(content), maxWriteBytes)
	}
	created := false
	mode := fs.FileMode(0o644)
	fi, err := w.root.Lstat(clean)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err == nil && fi.Mode().IsRegular():
		mode = fi.Mode().Perm()
	}
	if dir := path.Dir(clean); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return nil, w.explain(clean, err)
		}
	}
	if !created && (err != nil || !fi.Mode().IsRegular()) {
		// A symbolic link (inside the workspace) is written through, as
		// before; renaming over it would replace the link itself.
		return w.writeInPlace(clean, content, created)
	}
	// Write a temporary file beside the target and rename it over: a
	// process killed mid-write leaves the old content or the new, never an
	// empty or half-written file (a re-run after a crash then repeats the
	// recorded write).
	tmp := path.Join(path.Dir(clean), "."+path.Base(clean)+".swarmdeck-"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return nil, w.explain(clean, err)
	}
	_, err = f.Write(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.root.Rename(tmp, clean)
	}
	if err != nil {
		w.root.Remove(tmp)
		return nil, w.explain(clean, err)
	}
	return &WriteResult{Path: clean, Bytes: len(content), Created: created}, nil
}

// writeInPlace truncates and rewrites the file clean.
func (w *Workspace) writeInPlace(clean string, content []byte, created bool) (*WriteResult, error) {
	f, err := w.root.OpenFile(clean, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
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
	data, err := w.root.ReadFile(clean)
	if err != nil {
		return "", nil, 0, w.explain(clean, err)
	}
	n := bytes.Count(data, []byte(old))
	switch {
	case n == 0:
		return "", nil, 0, Errorf("old_string was not found in %s; read the file again and copy the exact text, including spaces", clean)
	case n > 1 && !all:
		return "", nil, 0, Errorf("old_string occurs %d times in %s; include more surrounding text to make it unique, or set replace_all to true", n, clean)
	}
	if !all {
		n = 1
	}
	return clean, bytes.Replace(data, []byte(old), []byte(new), n), n, nil
}
