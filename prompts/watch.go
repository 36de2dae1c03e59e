package prompts

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// settle is how long the directory must stay quiet before a reload. Editors
// save in several steps (truncate, write, rename); reloading in the middle
// would parse a half-written file.
const settle = 100 * time.Millisecond

// lookAgain is how often a prompts directory that went away is looked for.
const lookAgain = 250 * time.Millisecond

// Watch reloads the templates whenever something in the override directory
// changes, follows SetDir, and returns nil when ctx ends. Call it once, on
// its own goroutine. Errors after the start (a reload refused, a watcher
// failure) go to the logger and the OnError functions; the previous
// templates stay in use.
func (l *Library) Watch(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("prompts: watch the prompts directory: %w", err)
	}
	defer w.Close()

	watched := ""
	// missing is set while the directory cannot be watched (removed, or
	// renamed away): it is looked for every lookAgain until it is back,
	// as after a checkout that deletes and re-creates it.
	missing := false
	retry := time.NewTicker(lookAgain)
	retry.Stop()
	defer retry.Stop()
	follow := func() {
		dir := l.currentDir()
		if dir == watched {
			return
		}
		if watched != "" {
			_ = w.Remove(watched) // fails only if the directory is gone, which ends the watch anyway
			watched = ""
		}
		if dir == "" {
			missing = false
			retry.Stop()
			return
		}
		if err := w.Add(dir); err != nil {
			// Once the directory can be watched, its templates load and
			// say so, even as they were before.
			l.forgetDigest()
			if !missing {
				// Said once; reload says why the templates did not load.
				l.report(fmt.Errorf("prompts: watch %s: %w", dir, err))
				missing = true
				retry.Reset(lookAgain)
			}
			return
		}
		watched, missing = dir, false
		retry.Stop()
		// Changes made between the load and Add would otherwise wait for
		// the next event; the digest makes this free when nothing changed.
		l.reload()
	}
	follow()

	timer := time.NewTimer(settle)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.dirChanged:
			follow()
		case <-retry.C:
			follow()
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if watched != "" && filepath.Clean(ev.Name) == filepath.Clean(watched) && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				// The directory itself went: the watch goes with it (or
				// follows it where it was renamed to). Its templates are
				// read once more, which says that they are gone, and the
				// directory is looked for until it is back.
				_ = w.Remove(watched)
				watched, missing = "", true
				retry.Reset(lookAgain)
			}
			// Any event counts, not only *.md ones: a template may be a
			// symlink whose target is swapped by a rename in this directory.
			// The digest in reload filters out changes that do not matter.
			timer.Reset(settle)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			l.report(fmt.Errorf("prompts: watching %s: %w", watched, err))
		case <-timer.C:
			l.reload()
		}
	}
}
