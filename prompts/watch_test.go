package prompts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startWatch runs Watch until the test ends and returns a channel of the
// errors it reports.
func startWatch(t *testing.T, l *Library) <-chan error {
	t.Helper()
	errs := make(chan error, 16)
	l.OnError(func(err error) {
		select {
		case errs <- err:
		default:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Watch(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Watch returned %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Watch did not return after cancel")
		}
	})
	return errs
}

// eventually polls System until its output contains want.
func eventually(t *testing.T, l *Library, d Data, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := l.System(d)
		if err == nil && strings.Contains(out, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("System never contained %q; last output:\n%s\nerr: %v", want, out, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func researcherWith(text string) string {
	return "{{template \"_header\" .}}\n\n" + text + "\n\n{{template \"_protocols\" .}}\n"
}

// reloadsOf receives the directory of each reload of l that it says.
func reloadsOf(l *Library) <-chan string {
	reloads := make(chan string, 16)
	l.OnReload(func(dir string) {
		select {
		case reloads <- dir:
		default:
		}
	})
	return reloads
}

func TestWatchReloadsAndKeepsPreviousOnError(t *testing.T) {
	dir := t.TempDir()
	l := newLibrary(t, dir)
	reloads := reloadsOf(l)
	errs := startWatch(t, l)
	d := childData("researcher", "workspace")

	// A new override file is picked up by the next System call.
	writeFile(t, dir, "researcher.md", researcherWith("Version one."))
	eventually(t, l, d, "Version one.")

	// So is an edit, written in place the way most editors do.
	writeFile(t, dir, "researcher.md", researcherWith("Version two."))
	eventually(t, l, d, "Version two.")
	drain(errs)

	// A broken edit is reported with file and line; the previous version stays.
	path := writeFile(t, dir, "researcher.md", "{{template \"_header\" .}}\n{{if .Role}\n")
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), path+":2:") {
			t.Errorf("reported %q, want it to name %s:2", err, path)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("broken edit not reported")
	}
	if out := render(t, l, d); !strings.Contains(out, "Version two.") {
		t.Errorf("broken edit replaced the templates:\n%s", out)
	}

	// Fixing the file recovers, and says so: a dashboard that showed the
	// error takes it down then. Removing it restores the embedded template.
	drain(reloads)
	writeFile(t, dir, "researcher.md", researcherWith("Version three."))
	eventually(t, l, d, "Version three.")
	select {
	case got := <-reloads:
		if got != dir {
			t.Errorf("OnReload got %q, want %q", got, dir)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fixed edit was loaded without OnReload")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually(t, l, d, "Find and weigh the information")
}

func TestWatchFollowsSetDir(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	l := newLibrary(t, first)
	startWatch(t, l)
	d := childData("researcher", "workspace")

	writeFile(t, first, "researcher.md", researcherWith("From the first directory."))
	eventually(t, l, d, "From the first directory.")

	if err := l.SetDir(second); err != nil {
		t.Fatal(err)
	}
	writeFile(t, second, "researcher.md", researcherWith("From the second directory."))
	eventually(t, l, d, "From the second directory.")

	// Edits in the directory left behind no longer count.
	writeFile(t, first, "researcher.md", researcherWith("Stale."))
	time.Sleep(4 * settle)
	if out := render(t, l, d); strings.Contains(out, "Stale.") {
		t.Error("an edit in the old directory was loaded")
	}
}

// A prompts directory removed and made again (a checkout, rm -rf and a
// copy), or replaced by another renamed into its place, is watched again
// once it is back: its templates load, and the reload is said, which takes
// down the error its absence showed.
func TestWatchFollowsADirectoryMadeAgain(t *testing.T) {
	for _, how := range []string{"removed", "renamed away"} {
		t.Run(how, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "prompts")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "researcher.md", researcherWith("Version one."))
			l := newLibrary(t, dir)
			reloads := reloadsOf(l)
			errs := startWatch(t, l)
			d := childData("researcher", "workspace")
			writeFile(t, dir, "researcher.md", researcherWith("Version one, watched."))
			eventually(t, l, d, "Version one, watched.")
			writeFile(t, dir, "researcher.md", researcherWith("Version one."))
			eventually(t, l, d, "Version one.")
			time.Sleep(2 * settle)
			drain(errs) // a write caught halfway may have been refused

			if how == "removed" {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			} else if err := os.Rename(dir, filepath.Join(parent, "old")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-errs:
			case <-time.After(5 * time.Second):
				t.Fatal("the directory's absence was not reported")
			}
			drain(reloads)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "researcher.md", researcherWith("Version one."))
			select {
			case <-reloads: // the same templates as before, said all the same
			case <-time.After(5 * time.Second):
				t.Fatal("the directory made again was not reloaded")
			}
			writeFile(t, dir, "researcher.md", researcherWith("Version two."))
			eventually(t, l, d, "Version two.")
			if how == "renamed away" {
				writeFile(t, filepath.Join(parent, "old"), "researcher.md", researcherWith("Stale."))
				time.Sleep(4 * settle)
				if out := render(t, l, d); strings.Contains(out, "Stale.") {
					t.Error("an edit in the directory renamed away was loaded")
				}
			}
		})
	}
}

// TestConcurrentRenderDuringReload runs renders against reloads; -race
// checks that a reload never exposes a half-built set.
func TestConcurrentRenderDuringReload(t *testing.T) {
	dir := t.TempDir()
	l := newLibrary(t, dir)
	startWatch(t, l)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := l.System(rootData()); err != nil {
					t.Error(err)
					return
				}
				l.Reminder(ReminderData{Ready: []string{"a", "b"}})
				l.Names()
			}
		})
	}
	for i := range 5 {
		writeFile(t, dir, "_closing.md", fmt.Sprintf("## Done\nAnswer with your final result as plain text, without calling any tool. Round %d.\n", i))
		if err := l.SetDir(dir); err != nil {
			t.Error(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	eventually(t, l, rootData(), "Round 4.")
	cancel()
	wg.Wait()
}

func drain[T any](ch <-chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
