//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// On a full disk the runs stored are still listed and exported, and a run
// is refused with the reason and the exit status of a failure, not of bad
// usage. The test mounts a small filesystem, and is skipped where it may not.
func TestAFullDiskIsSaidAsSuch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := buildSwarmdeck(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small filesystem here: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	home := t.TempDir()
	db := filepath.Join(dir, "s.db")
	swarmdeck := func(args ...string) (string, int) {
		cmd := exec.Command(bin, append([]string{"--db", db}, args...)...)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home, "OPENAI_API_KEY=")
		cmd.Dir = home
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := swarmdeck("run", "--headless", "--scripted-latency", "0", "--scripted-stream-speed", "0", "a quick demo"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	f, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for block := make([]byte, 4096); err == nil; {
		_, err = f.Write(block)
	}
	f.Close()

	if out, code := swarmdeck("runs"); code != 0 || !strings.Contains(out, "a quick demo") {
		t.Errorf("runs on a full disk: exit %d\n%s", code, out)
	}
	if out, code := swarmdeck("export"); code != 0 || !strings.Contains(out, `"goal": "a quick demo"`) {
		t.Errorf("export on a full disk: exit %d\n%.300s", code, out)
	}
	want := "the disk that holds " + db + " is full"
	if out, code := swarmdeck("run", "--headless", "another"); code != 1 || !strings.Contains(out, want) {
		t.Errorf("run on a full disk: exit %d, want 1 and %q\n%s", code, want, out)
	}
}
