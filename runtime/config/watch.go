package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/swarmdeck/swarmdeck/runtime/fileerr"
)

// debounce is how long the file must stay quiet before it is re-read: an
// editor's save is several events (truncate, write, rename, chmod) and
// reading between them would see half a file.
const debounce = 100 * time.Millisecond

// linkCheck is how often the watch looks whether a symlink on the way to
// the file now points elsewhere.
const linkCheck = 2 * time.Second

// Watch re-reads the configuration file at path whenever it changes and
// calls onChange with the new, validated Config, or onError when the edit is
// invalid or unreadable; after an error the caller keeps the Config it has.
// A save that leaves the content as it was calls neither.
//
// The runtime decides what a new Config changes while a run is going: it
// applies limits, the scripted provider's latency and stream speed, and
// prompts_dir; other settings wait for the next start. The new Config is the
// file alone: apply the command-line Overrides to it again before use, or a
// reload would quietly undo --scripted-latency and the others.
//
// Watch blocks until ctx is done and then returns nil; run it in its own
// goroutine. It returns an error only when watching cannot start. The
// callbacks run on Watch's goroutine, one at a time, never after Watch
// returns.
func Watch(ctx context.Context, path string, onChange func(*Config), onError func(error)) error {
	return watch(ctx, path, onChange, onError, debounce, nil)
}

// watch is Watch with the quiet period as a parameter and a hook called once
// the watcher is in place, so tests know when an edit will be seen and need
// not race the debounce timer.
func watch(ctx context.Context, path string, onChange func(*Config), onError func(error), quiet time.Duration, ready func()) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s: cannot watch: %w", path, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("%s: cannot watch: %w", path, err)
	}
	defer w.Close()

	// Watch the directory, not the file: editors save by writing a new file
	// and renaming it over the old one, which ends a watch on the file
	// itself. When the config is a symlink (dotfile managers do this) the
	// edits happen next to its target, so watch there too.
	if err := w.Add(filepath.Dir(abs)); err != nil {
		return fmt.Errorf("%s: cannot watch %s: %w", path, filepath.Dir(abs), err)
	}
	// resolved is the file path reaches, symlinks followed; target is
	// the same when it is another than abs, "" otherwise. A dotfile
	// manager may point a link elsewhere later (ln -sfn), the file's or a
	// directory's above it: the file's own change is seen as an event, a
	// directory's by looking now and then, and the new target is watched
	// from then on. A watch left on an old target only ever finds the
	// content unchanged.
	resolved, target := abs, ""
	follow := func() (bool, error) {
		real, err := filepath.EvalSymlinks(abs)
		if err != nil || real == resolved {
			return false, nil
		}
		resolved, target = real, ""
		// Added again, a symlinked directory is watched where it now
		// points.
		if err := w.Add(filepath.Dir(abs)); err != nil {
			return true, err
		}
		if real == abs {
			return true, nil
		}
		target = real
		return true, w.Add(filepath.Dir(real))
	}
	if _, err := follow(); err != nil {
		return fmt.Errorf("%s: cannot watch %s: %w", path, filepath.Dir(resolved), err)
	}
	relink := time.NewTicker(linkCheck)
	defer relink.Stop()

	last, _ := os.ReadFile(abs) // the content the caller loaded, near enough
	timer := time.NewTimer(quiet)
	timer.Stop()
	if ready != nil {
		ready()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			switch name := filepath.Clean(ev.Name); {
			case ev.Op == fsnotify.Chmod:
			case name == abs:
				if _, err := follow(); err != nil {
					onError(fmt.Errorf("%s: cannot watch %s: %w", path, filepath.Dir(resolved), err))
				}
				timer.Reset(quiet)
			case name == target:
				timer.Reset(quiet)
			}
		case <-relink.C:
			moved, err := follow()
			if err != nil {
				onError(fmt.Errorf("%s: cannot watch %s: %w", path, filepath.Dir(resolved), err))
			}
			if moved {
				timer.Reset(quiet)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			onError(fmt.Errorf("%s: watching for changes: %w", path, err))
		case <-timer.C:
			data, err := os.ReadFile(abs)
			if errors.Is(err, fs.ErrNotExist) {
				// Deleted, or caught mid-replace; a later create fires again
				// and, whatever it holds, reports through onChange or onError.
				last = nil
				onError(fmt.Errorf("%s: the file is gone; keeping the configuration loaded before", path))
				continue
			}
			if err != nil {
				onError(fmt.Errorf("%s: cannot read the configuration: %w", path, fileerr.Reason(err)))
				continue
			}
			if bytes.Equal(data, last) {
				continue
			}
			// last is the last content tried, good or bad, so that putting
			// back the old good content after a bad edit reports the
			// recovery through onChange.
			last = data
			cfg, err := Parse(path, data)
			if err != nil {
				onError(err)
				continue
			}
			cfg.Path = path
			onChange(cfg)
		}
	}
}
