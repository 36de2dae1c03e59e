//go:build linux

package store

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// fullDisk mounts a small filesystem of its own for the test and returns
// its directory, or skips the test where mounting is not allowed (tests
// not run as root, a container without the capability).
func fullDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small filesystem here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// fill writes into dir until its filesystem has no room left.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			return
		}
	}
}

// On a full disk, where SQLite cannot make a database's -shm file, what is
// stored can still be read, and a new database is refused as full without
// leaving an empty file behind.
func TestAFullDisk(t *testing.T) {
	dir := fullDisk(t)
	path := filepath.Join(dir, "t.db")
	ctx := context.Background()
	storeOneRun(t, path)
	fill(t, dir)

	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("reading a database on a full disk: %v", err)
	}
	runs, err := r.Runs(ctx, 0)
	r.Close()
	if err != nil || len(runs) != 1 || runs[0].ID != "r-1" {
		t.Errorf("runs read on a full disk: %v, %v", runs, err)
	}

	names, _ := os.ReadDir(dir)
	_, err = Open(filepath.Join(dir, "new.db"), nil)
	if !IsFull(err) {
		t.Fatalf("a new database on a full disk: %v, want one IsFull says is full", err)
	}
	after, _ := os.ReadDir(dir)
	name := func(e os.DirEntry) string { return e.Name() }
	var before, now []string
	for _, e := range names {
		before = append(before, name(e))
	}
	for _, e := range after {
		now = append(now, name(e))
	}
	if !slices.Equal(before, now) {
		t.Errorf("a refused new database left %v where there was %v", now, before)
	}
}
