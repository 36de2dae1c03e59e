// Package prompts owns the text swarmdeck puts in front of its models: the
// system prompt of every role of the roster, the protocol sections shared by
// the roles (shared context, sub-agents, sibling communication, planning,
// delegation, coordination etiquette, workspace), the shadow responder prompt
// used to answer ask_others questions, and the dynamic reminders injected at
// turn boundaries.
//
// The templates are Go text/template files (*.md) embedded in the binary. A
// file of the same name in the configured prompts directory replaces the
// embedded one, and new files join the same set, so any template may include
// any other by name (the file name without .md). Files whose name starts with
// "_" are partials; shadow.md and reminder.md have their own data types;
// every other file is a role prompt rendered with Data.
//
// Only the sections of enabled tool groups are rendered, and a few lines of
// every system prompt are an interface parsed by other components (see
// FirstLine and DelegatedLine): templates that would break them are refused
// when loaded, and an edit that fails keeps the previous templates.
package prompts

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
)

// Library renders prompts from the current generation of templates. It is
// safe for concurrent use: a reload swaps in a complete new generation, so
// a render never sees a half-loaded set.
type Library struct {
	logger *slog.Logger
	cur    atomic.Pointer[templateSet]

	// mu serialises loads and guards the fields below.
	mu         sync.Mutex
	dir        string
	lastDigest [sha256.Size]byte // of the last override contents tried, good or bad
	onError    []func(error)
	onReload   []func(dir string)

	// dirChanged tells a running Watch to move its watch after SetDir.
	dirChanged chan struct{}
}

// New loads the embedded templates and, when dir is not "", the *.md files of
// dir over them. A template that fails to parse or to render sample data is
// an error naming its file and line (see TemplateError). A nil logger
// discards.
func New(dir string, logger *slog.Logger) (*Library, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l := &Library{logger: logger, dirChanged: make(chan struct{}, 1)}
	if err := l.load(cleanDir(dir)); err != nil {
		return nil, err
	}
	return l, nil
}

// System renders the full system prompt of a session: the template named by
// d.Template, else d.Role, else the generic agent template.
func (l *Library) System(d Data) (string, error) {
	if d.Role == "" {
		return "", errors.New("prompts: the session has no role; set Data.Role")
	}
	s := l.cur.Load()
	name := l.roleTemplate(s, d)
	out, err := s.system(name, d)
	if err != nil {
		return "", err
	}
	// Sample data at load time cannot cover every session (a roster entry
	// may point a role at another role's template), so check the real one.
	if err := checkMarkers(out, d); err != nil {
		return "", &TemplateError{File: s.files[name], Msg: err.Error()}
	}
	return out, nil
}

// roleTemplate picks the template a session renders.
func (l *Library) roleTemplate(s *templateSet, d Data) string {
	has := func(name string) bool { return isRoleName(name) && s.tmpl.Lookup(name) != nil }
	if d.Template != "" {
		if has(d.Template) {
			return d.Template
		}
		// A typo in the roster should be visible, but not stop the session.
		l.logger.Warn("prompts: no such role template, using the role's", "template", d.Template, "role", d.Role)
	}
	if has(d.Role) {
		return d.Role
	}
	return fallbackTemplate
}

// Shadow renders the prompt of a shadow responder: a tool-less call that
// answers a question on behalf of another session.
func (l *Library) Shadow(d ShadowData) (string, error) {
	return l.cur.Load().render(shadowTemplate, d)
}

// Reminder renders the dynamic reminders for a session's plan, or "" when
// there is nothing to remind (the runtime then injects nothing).
func (l *Library) Reminder(d ReminderData) string {
	if len(d.Blocked) == 0 && len(d.Ready) == 0 {
		return ""
	}
	out, err := l.cur.Load().render(reminderTemplate, d)
	if err != nil {
		// A missing reminder costs a hint, not the turn: log and carry on.
		l.logger.Error("prompts: render reminder", "err", err)
		return ""
	}
	return out
}

// SetDir switches to another override directory ("" for embedded only), as
// when a configuration reload changes prompts_dir. On error the previous
// directory and templates stay in use.
func (l *Library) SetDir(dir string) error {
	if err := l.load(cleanDir(dir)); err != nil {
		return err
	}
	select {
	case l.dirChanged <- struct{}{}:
	default: // a move is already pending; Watch reads the directory afresh
	}
	return nil
}

// Names lists the template names (file names without .md), sorted.
func (l *Library) Names() []string {
	s := l.cur.Load()
	return append([]string(nil), s.names...)
}

// RoleNames lists the templates a role's prompt can name (not the shared
// parts, the shadow's or the reminder's), sorted.
func (l *Library) RoleNames() []string {
	var out []string
	for _, n := range l.Names() {
		if isRoleName(n) {
			out = append(out, n)
		}
	}
	return out
}

// OnError registers a function called with every error Watch meets: a
// reload refused (the previous templates stay in use) or a watcher failure.
// It runs on the watching goroutine, so it should return quickly.
func (l *Library) OnError(fn func(error)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onError = append(l.onError, fn)
}

// OnReload registers a function called with the directory after each reload that Watch makes
// of a changed directory (not after the first load, nor SetDir's), on the
// watching goroutine: it should return quickly.
func (l *Library) OnReload(fn func(dir string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.onReload = append(l.onReload, fn)
}

// load reads and compiles dir and makes it current.
func (l *Library) load(dir string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	srcs, digest, err := readSources(dir)
	if err != nil {
		return err
	}
	s, err := compile(srcs)
	if err != nil {
		return err
	}
	l.dir, l.lastDigest = dir, digest
	l.cur.Store(s)
	l.logger.Info("prompts: templates loaded", "dir", dir, "overrides", s.overrides)
	return nil
}

// reload rereads the current directory after a change on disk. Editors make
// several events per save, so contents already tried are skipped: a good
// version is not reloaded twice and a broken one is reported once.
func (l *Library) reload() {
	l.mu.Lock()
	dir := l.dir
	srcs, digest, err := readSources(dir)
	if err == nil && digest == l.lastDigest {
		l.mu.Unlock()
		return
	}
	if err != nil {
		// The directory could not be read (removed, say): once it can,
		// its templates load and say so, even as they were before.
		l.lastDigest = [sha256.Size]byte{}
	}
	var s *templateSet
	if err == nil {
		l.lastDigest = digest
		s, err = compile(srcs)
	}
	var fns []func(string)
	if err == nil {
		l.cur.Store(s)
		l.logger.Info("prompts: templates reloaded", "dir", dir, "overrides", s.overrides)
		fns = slices.Clone(l.onReload)
	}
	l.mu.Unlock()
	if err != nil {
		l.report(err)
	}
	for _, fn := range fns {
		fn(dir)
	}
}

// forgetDigest makes the next reload load the templates, and say so, even
// where they are as they were: the directory could not be followed
// meanwhile, and an error said so.
func (l *Library) forgetDigest() {
	l.mu.Lock()
	l.lastDigest = [sha256.Size]byte{}
	l.mu.Unlock()
}

// report logs an error and hands it to the OnError functions, outside the
// lock so that they may call back into the library.
func (l *Library) report(err error) {
	l.logger.Error("prompts: templates not reloaded, the previous ones stay in use", "err", err)
	l.mu.Lock()
	fns := slices.Clone(l.onError)
	l.mu.Unlock()
	for _, fn := range fns {
		fn(err)
	}
}

func (l *Library) currentDir() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dir
}

func cleanDir(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Clean(dir)
}
