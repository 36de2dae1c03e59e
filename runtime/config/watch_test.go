package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	writeFile(t, path, "limits:\n  max_turns_per_session: 5\n")

	changes := make(chan *Config, 10)
	errs := make(chan error, 10)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- watch(ctx, path,
			func(c *Config) { changes <- c },
			func(err error) { errs <- err },
			debounce, func() { close(ready) })
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch returned %v", err)
		}
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Watch did not start: %v", err)
	}

	nextChange := func(want int) {
		t.Helper()
		select {
		case c := <-changes:
			if c.Limits.MaxTurnsPerSession != want || c.Path != path {
				t.Fatalf("reloaded max_turns_per_session = %d path %q, want %d %q", c.Limits.MaxTurnsPerSession, c.Path, want, path)
			}
		case err := <-errs:
			t.Fatalf("want a reload, got error %v", err)
		case <-time.After(5 * time.Second):
			t.Fatal("no reload after an edit")
		}
	}

	// An edit in place.
	writeFile(t, path, "limits:\n  max_turns_per_session: 7\n")
	nextChange(7)

	// A bad edit is reported and nothing is reloaded.
	writeFile(t, path, "limits:\n  max_turns_per_session: 7\n  call_timeout: fast\n")
	select {
	case err := <-errs:
		if !strings.HasPrefix(err.Error(), path+":3: limits.call_timeout: ") {
			t.Errorf("bad edit reported as %v", err)
		}
	case c := <-changes:
		t.Fatalf("a bad edit was delivered: %+v", c.Limits)
	case <-time.After(5 * time.Second):
		t.Fatal("a bad edit was not reported")
	}

	// So is a key bound to two actions: the keys loaded before stay.
	writeFile(t, path, "limits:\n  max_turns_per_session: 8\nui:\n  keys:\n    quit: [b]\n")
	select {
	case err := <-errs:
		if !strings.HasPrefix(err.Error(), path+":5: ui.keys.quit: \"b\" is also the default key of broadcast") {
			t.Errorf("clashing keys reported as %v", err)
		}
	case c := <-changes:
		t.Fatalf("clashing keys were delivered: %v", c.UI.Keys)
	case <-time.After(5 * time.Second):
		t.Fatal("clashing keys were not reported")
	}

	// An editor's save: write a temporary file, rename it over the config.
	tmp := filepath.Join(dir, ".config.yaml.swp")
	writeFile(t, tmp, "limits:\n  max_turns_per_session: 9\n")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	nextChange(9)

	// Other files in the directory are not the config.
	writeFile(t, filepath.Join(dir, "notes.txt"), "hello")
	// Saving the same content again changes nothing.
	writeFile(t, path, "limits:\n  max_turns_per_session: 9\n")
	select {
	case c := <-changes:
		t.Errorf("reload without a change: %+v", c.Limits)
	case err := <-errs:
		t.Errorf("error without a change: %v", err)
	case <-time.After(4 * debounce):
	}
}

func TestWatchCoalescesBurstsOfWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	writeFile(t, path, "model: a\n")
	// Longer than the production debounce so that a slow machine pausing
	// between two writes does not make the test fail.
	const quiet = 500 * time.Millisecond

	changes := make(chan *Config, 100)
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = watch(ctx, path, func(c *Config) { changes <- c }, func(err error) { t.Errorf("onError: %v", err) }, quiet, func() { close(ready) })
	}()
	defer func() { cancel(); <-done }()
	<-ready

	// A save written in pieces: a half-written file must never be parsed.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"mod", "el: ", "fin", "al\n"} {
		if _, err := f.WriteString(part); err != nil {
			t.Fatal(err)
		}
		time.Sleep(quiet / 50)
	}
	f.Close()

	select {
	case c := <-changes:
		if c.Model != "final" {
			t.Errorf("model = %q", c.Model)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no reload")
	}
	select {
	case c := <-changes:
		t.Errorf("second reload for one save: model %q", c.Model)
	case <-time.After(2 * quiet):
	}
}

func TestWatchReturnsWhenItCannotStart(t *testing.T) {
	err := Watch(context.Background(), filepath.Join(t.TempDir(), "missing-dir", "config.yaml"), func(*Config) {}, func(error) {})
	if err == nil || !strings.Contains(err.Error(), "cannot watch") {
		t.Errorf("Watch on a missing directory = %v", err)
	}
}

// A config reached through a symlink is followed where it points, also
// after the link is pointed elsewhere (ln -sfn, as dotfile managers switch
// profiles), whether it is the file's or a directory's above it (stow's
// layout): edits of the new target reload, edits of the old one no longer
// do.
func TestWatchFollowsASymlink(t *testing.T) {
	for _, layout := range []string{"file", "directory"} {
		t.Run(layout, func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "dotA", "swarmdeck", "config.yaml"), filepath.Join(dir, "dotB", "swarmdeck", "config.yaml")
			for _, d := range []string{filepath.Dir(a), filepath.Dir(b), filepath.Join(dir, "home")} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			writeFile(t, a, "limits:\n  max_turns_per_session: 5\n")
			writeFile(t, b, "limits:\n  max_turns_per_session: 7\n")
			// The link is the config itself, or its directory.
			link, to := filepath.Join(dir, "home", "config.yaml"), func(f string) string { return f }
			path := link
			if layout == "directory" {
				link, to = filepath.Join(dir, "home", "swarmdeck"), filepath.Dir
				path = filepath.Join(link, "config.yaml")
			}
			if err := os.Symlink(to(a), link); err != nil {
				t.Skipf("no symlinks: %v", err)
			}
			changes := make(chan int, 10)
			errs := make(chan error, 10)
			ready := make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go watch(ctx, path, func(c *Config) { changes <- c.Limits.MaxTurnsPerSession }, func(err error) { errs <- err }, debounce, func() { close(ready) })
			<-ready
			next := func(want int) {
				t.Helper()
				select {
				case got := <-changes:
					if got != want {
						t.Fatalf("reloaded max_turns_per_session = %d, want %d", got, want)
					}
				case err := <-errs:
					t.Fatalf("want a reload, got error %v", err)
				case <-time.After(3*linkCheck + time.Second):
					t.Fatalf("no reload to %d", want)
				}
			}
			writeFile(t, a, "limits:\n  max_turns_per_session: 6\n")
			next(6)
			tmp := link + ".new"
			if err := os.Symlink(to(b), tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, link); err != nil {
				t.Fatal(err)
			}
			next(7)
			writeFile(t, b, "limits:\n  max_turns_per_session: 8\n")
			next(8)
			writeFile(t, a, "limits:\n  max_turns_per_session: 9\n")
			select {
			case got := <-changes:
				t.Errorf("an edit of the old target reloaded %d", got)
			case err := <-errs:
				t.Errorf("an edit of the old target: %v", err)
			case <-time.After(4 * debounce):
			}
		})
	}
}
