package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// editHost is the part of a Host the write tools use: the workspace and the
// record of write intents. The first call's intent waits until the second
// call records its own (or a while passes), so that without a lock both
// calls read the file before either writes it.
type editHost struct {
	Host // the other methods are not used by the write tools
	ws   *Workspace

	mu      sync.Mutex
	intents map[string][]byte
	second  chan struct{}
	once    sync.Once
}

func (h *editHost) Workspace() *Workspace { return h.ws }

func (h *editHost) Intent(ctx context.Context, c *Call, data []byte) ([]byte, error) {
	h.mu.Lock()
	earlier, ok := h.intents[c.ID]
	if !ok && data != nil {
		h.intents[c.ID] = data
	}
	h.mu.Unlock()
	if ok || data == nil {
		return earlier, nil
	}
	if c.ID == "first" {
		select {
		case <-h.second:
		case <-time.After(300 * time.Millisecond):
		}
	} else {
		h.once.Do(func() { close(h.second) })
	}
	return nil, nil
}

// Two edit_file calls on one file at once (a model's answer with two edits
// runs them concurrently) must both land: each reads the file after the
// other has written it.
func TestConcurrentEditsOfOneFileBothLand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plan.md"), []byte("alpha\nbeta\n"), 0o644)
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	h := &editHost{ws: ws, intents: map[string][]byte{}, second: make(chan struct{})}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []struct{ id, args string }{
		{"first", `{"path":"plan.md","old_string":"alpha","new_string":"alpha (checked)"}`},
		{"second", `{"path":"plan.md","old_string":"beta","new_string":"beta (checked)"}`},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = editFile.Run(context.Background(), &Call{ID: c.id, Name: "edit_file", Host: h}, c.args)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("edit %d: %v", i, err)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "plan.md"))
	if want := "alpha (checked)\nbeta (checked)\n"; string(got) != want {
		t.Errorf("plan.md = %q, want %q: an edit was written over", got, want)
	}
}

// A write killed half-way must leave the old content or the new, never a
// truncated file; the write goes through a temporary file renamed over the
// target, which keeps the target's permissions.
func TestWriteReplacesTheFileWhole(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "run.sh")
	os.WriteFile(target, []byte("#!/bin/sh\necho old\n"), 0o755)
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	res, err := ws.Write("run.sh", []byte("#!/bin/sh\necho new\n"))
	if err != nil || res.Created {
		t.Fatalf("Write = %+v, %v", res, err)
	}
	fi, err := os.Lstat(target)
	if err != nil || fi.Mode().Perm() != 0o755 || !fi.Mode().IsRegular() {
		t.Errorf("run.sh after the write: %v, %v; want a regular file with mode 0755", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the write left %d entries in the workspace, want only run.sh", len(entries))
	}
	// A link inside the workspace is still written through, not replaced.
	os.Symlink("run.sh", filepath.Join(dir, "link.sh"))
	if _, err := ws.Write("link.sh", []byte("#!/bin/sh\necho via link\n")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(filepath.Join(dir, "link.sh")); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("writing through a link replaced the link")
	}
	if got, _ := os.ReadFile(target); string(got) != "#!/bin/sh\necho via link\n" {
		t.Errorf("run.sh = %q after writing through the link", got)
	}
}

// write_file to a path that ends with a slash is refused by the tool, not
// made into a file of the name without it.
func TestWriteFileToolRefusesADirectoryPath(t *testing.T) {
	dir := t.TempDir()
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	h := &editHost{ws: ws, intents: map[string][]byte{}, second: make(chan struct{})}
	_, err = writeFile.Run(context.Background(), &Call{ID: "w", Name: "write_file", Host: h}, `{"path":"out/","content":"x"}`)
	if err == nil || !strings.Contains(err.Error(), `"out/" ends with a slash`) {
		t.Errorf("write_file to out/: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("a file out was written")
	}
}

// edit_file on a file over the write limit says that such a file cannot
// be edited, before reading it, and an edit that would take a file over
// the limit says so too; neither tells to split content that the model
// never gave.
func TestEditAFileOverTheWriteLimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	os.WriteFile(big, []byte("first line\n"+strings.Repeat("x", maxWriteBytes)+"\n"), 0o644)
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	h := &editHost{ws: ws, intents: map[string][]byte{}, second: make(chan struct{})}
	_, err = editFile.Run(context.Background(), &Call{ID: "e", Name: "edit_file", Host: h}, `{"path":"big.log","old_string":"first line","new_string":"line one"}`)
	if err == nil || !strings.Contains(err.Error(), "big.log is 4194316 bytes, over the 4194304 (4 MiB) that the file tools write, so edit_file cannot change it") || strings.Contains(err.Error(), "split") {
		t.Errorf("edit of a file over the limit: %v", err)
	}
	near := filepath.Join(dir, "near.txt")
	os.WriteFile(near, []byte("grow\n"+strings.Repeat("y", maxWriteBytes-10)), 0o644)
	_, err = editFile.Run(context.Background(), &Call{ID: "n", Name: "edit_file", Host: h}, `{"path":"near.txt","old_string":"grow","new_string":"grow by more than ten bytes"}`)
	if err == nil || !strings.Contains(err.Error(), "the edit would make near.txt 4194322 bytes") || strings.Contains(err.Error(), "split") {
		t.Errorf("edit taking a file over the limit: %v", err)
	}
}

// edit_file refuses a file that read_file refuses as not text, and leaves
// it as it was: a replacement in a binary file would damage it.
func TestEditRefusesABinaryFile(t *testing.T) {
	dir := t.TempDir()
	blob := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR name=old\n")
	os.WriteFile(filepath.Join(dir, "image.png"), blob, 0o644)
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.Read("image.png", 0, 0); err == nil || !strings.Contains(err.Error(), "image.png is not a text file") {
		t.Fatalf("read_file of a binary file: %v", err)
	}
	h := &editHost{ws: ws, intents: map[string][]byte{}, second: make(chan struct{})}
	_, err = editFile.Run(context.Background(), &Call{ID: "e", Name: "edit_file", Host: h}, `{"path":"image.png","old_string":"name=old","new_string":"name=new"}`)
	if err == nil || !strings.Contains(err.Error(), "image.png is not a text file") {
		t.Errorf("edit_file of a binary file: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "image.png")); string(got) != string(blob) {
		t.Errorf("the binary file was changed: %q", got)
	}
}
