package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// A log of megabytes is searched to its end, given by its path or found
// under a directory; a file too large to search is named, with the reason
// and how to read it, rather than left out in silence.
func TestSearchLargeFiles(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	var log strings.Builder
	for log.Len() < 1700<<10 {
		log.WriteString("INFO 2024-05-01T12:00:00Z request served in 12ms from the cache\n")
	}
	log.WriteString("ERROR disk full\n")
	os.WriteFile(filepath.Join(dir, "app.log"), []byte(log.String()), 0o644)
	lines := strings.Count(log.String(), "\n")
	for _, p := range []string{"app.log", ""} {
		sr, err := w.Search("disk full", p, "", 0)
		if err != nil || len(sr.Matches) != 1 || sr.Matches[0].Line != lines || sr.Matches[0].Text != "ERROR disk full" {
			t.Errorf("Search in %q = %+v, %v; want line %d", p, sr, err, lines)
		}
	}

	// Over the limit of a search: named, with how to read it.
	huge := filepath.Join(dir, "huge.log")
	f, _ := os.Create(huge)
	f.Truncate(maxSearchFile + 1) // sparse: no disk taken
	f.Close()
	sr, err := w.Search("disk full", "", "*.log", 0)
	if err != nil || len(sr.Matches) != 1 || len(sr.Skipped) != 1 || sr.Skipped[0].Path != "huge.log" ||
		!strings.Contains(sr.Skipped[0].Reason, "over the 64 MiB that a search reads of a file; read it in parts with read_file (offset, limit)") {
		t.Errorf("Search with a file over the limit = %+v, %v", sr, err)
	}

	// A line longer than a search keeps: its start is searched, and the
	// result says so.
	os.WriteFile(filepath.Join(dir, "one-line.json"), []byte(strings.Repeat("x", maxSearchLine)+"disk full\nsecond line\n"), 0o644)
	sr, err = w.Search("second", "one-line.json", "", 0)
	if err != nil || len(sr.Matches) != 1 || sr.Matches[0].Line != 2 || len(sr.Skipped) != 1 ||
		!strings.Contains(sr.Skipped[0].Reason, "line 1 is longer than 1 MiB; only its start was searched") {
		t.Errorf("Search of a file with a line of megabytes = %+v, %v", sr, err)
	}

	// A binary file asked for by its path is said to be one; found under
	// a directory it is passed over, as grep does.
	os.WriteFile(filepath.Join(dir, "core"), []byte("\x7fELF\x00\x00disk full\n"), 0o644)
	sr, err = w.Search("disk full", "core", "", 0)
	if err != nil || len(sr.Matches) != 0 || len(sr.Skipped) != 1 || sr.Skipped[0].Reason != "it is not a text file" {
		t.Errorf("Search of a binary file by its path = %+v, %v", sr, err)
	}
	if sr, _ := w.Search("disk full", "", "core", 0); len(sr.Skipped) != 0 || len(sr.Matches) != 0 {
		t.Errorf("Search finding a binary file under a directory = %+v", sr)
	}
}

// A file in another encoding than UTF-8 is one that read_file, edit_file
// and search_files all refuse, and say so in the same words; a binary
// file is told apart from it.
func TestFilesNotInUTF8(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	os.WriteFile(filepath.Join(dir, "menu.txt"), []byte("cafe au lait\ncaf\xe9 cr\xe8me\n"), 0o644)
	want := "menu.txt is not UTF-8 text (line 2 is not: another encoding, such as Latin-1?)"
	if _, err := w.Read("menu.txt", 0, 0); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("read_file: %v, want %q", err, want)
	}
	// Only the line before it asked for: the file is not text all the same.
	if _, err := w.Read("menu.txt", 1, 1); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("read_file of its first line: %v, want %q", err, want)
	}
	if _, _, _, err := w.PlanEdit("menu.txt", "cafe", "coffee", false); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("edit_file: %v, want %q", err, want)
	}
	sr, err := w.Search("caf", "", "", 0)
	if err != nil || len(sr.Matches) != 0 || sr.Files != 1 || len(sr.Skipped) != 1 || sr.Skipped[0].Path != "menu.txt" ||
		!strings.Contains(sr.Skipped[0].Reason, "it is not UTF-8 text (line 2 is not: another encoding, such as Latin-1?), which read_file cannot show either") {
		t.Errorf("search_files: %+v, %v", sr, err)
	}

	// A file whose start is not UTF-8 and which holds a NUL byte further
	// on (a PDF, say) is binary, for all three.
	pdf := append([]byte("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"), []byte(strings.Repeat("stream data\n", 1000))...)
	pdf = append(pdf, "endstream\x00\n"...)
	os.WriteFile(filepath.Join(dir, "doc.pdf"), pdf, 0o644)
	if _, err := w.Read("doc.pdf", 0, 0); err == nil || !strings.Contains(err.Error(), "doc.pdf is not a text file") {
		t.Errorf("read_file of a binary file: %v", err)
	}
	if _, _, _, err := w.PlanEdit("doc.pdf", "stream data", "x", true); err == nil || !strings.Contains(err.Error(), "doc.pdf is not a text file") {
		t.Errorf("edit_file of a binary file: %v", err)
	}
	sr, _ = w.Search("stream", "doc.pdf", "", 0)
	if len(sr.Matches) != 0 || len(sr.Skipped) != 1 || !strings.Contains(sr.Skipped[0].Reason, "it is not a text file") {
		t.Errorf("search_files of a binary file: %+v", sr)
	}

	// A line cut for its length inside a character is still UTF-8.
	long := "needle " + strings.Repeat("語", maxSearchLine/3+10) + "\nnext\n"
	os.WriteFile(filepath.Join(dir, "long.txt"), []byte(long), 0o644)
	if fc, err := w.Read("long.txt", 1, 0); err != nil || !strings.HasPrefix(fc.Content, "needle 語語") || !utf8.ValidString(fc.Content) || fc.NextOffset != 2 {
		t.Errorf("read_file of a long line: %v", err)
	}
	if sr, _ := w.Search("next", "long.txt", "", 0); len(sr.Matches) != 1 || len(sr.Skipped) != 1 || !strings.Contains(sr.Skipped[0].Reason, "longer than 1 MiB") {
		t.Errorf("search_files of a long line: %+v", sr)
	}
}

// A glob with a slash matches the path from the workspace's top, ** any
// number of directories; one without matches base names, as before.
func TestSearchGlobsWithDirectories(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	for _, f := range []string{"src/app/server.go", "src/app/deep/er/handler.go", "docs/main.go.md", "main.go", "src/app/server_test.go"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(dir, f), []byte("package x // marker\n"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "src", "main.go"), []byte("package main // marker\n"), 0o644)
	for _, tt := range []struct {
		glob, path string
		want       []string
	}{
		{"**/*.go", "", []string{"main.go", "src/app/deep/er/handler.go", "src/app/server.go", "src/app/server_test.go", "src/main.go"}},
		{"src/*.go", "", []string{"src/main.go"}},
		{"./src/*.go", "", []string{"src/main.go"}},
		{"src/**/*_test.go", "", []string{"src/app/server_test.go"}},
		{"src/**/handler.go", "src", []string{"src/app/deep/er/handler.go"}},
		{"src/app/", "", []string{"src/app/deep/er/handler.go", "src/app/server.go", "src/app/server_test.go"}},
		{"*.go", "", []string{"main.go", "src/app/deep/er/handler.go", "src/app/server.go", "src/app/server_test.go", "src/main.go"}},
		{"*.md", "", []string{"docs/main.go.md"}},
		{"docs/*.go", "", nil},
	} {
		sr, err := w.Search("marker", tt.path, tt.glob, 0)
		if err != nil {
			t.Errorf("Search with glob %q: %v", tt.glob, err)
			continue
		}
		var got []string
		for _, m := range sr.Matches {
			got = append(got, m.Path)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("glob %q under %q found %v, want %v", tt.glob, tt.path, got, tt.want)
		}
	}
	if _, err := w.Search("marker", "", "/src/*.go", 0); err == nil || !strings.Contains(err.Error(), "is absolute") {
		t.Errorf("an absolute glob: %v", err)
	}
}
