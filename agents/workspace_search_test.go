package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
