package tui

import (
	"slices"
	"sort"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"github.com/swarmdeck/swarmdeck/runtime/config"
)

// keyMap holds every key binding of the dashboard. The footer and the `?`
// sheet are generated from it, and Options.Keys overrides it by action name,
// so a binding and its help can never disagree.
type keyMap struct {
	FocusNext, FocusPrev                    key.Binding
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
	Open, Back, Collapse, Filter            key.Binding
	Parent, PrevSibling, NextSibling        key.Binding
	FirstChild                              key.Binding

	Broadcast, Message, Answer, Skip, SkipAll, Cancel key.Binding
	Help, Quit                                        key.Binding

	// Keys inside dialogs. A dialog's text input receives printable keys, so
	// these are control keys, never letters.
	Send, ToggleTarget, CycleCategory, ToggleNoReply key.Binding
	UseRemembered, DialogSkip, DialogSkipAll         key.Binding
	Yes, No                                          key.Binding

	// ForceQuit is not overridable: ctrl+c must always get the person out.
	ForceQuit key.Binding
	// Suspend is not either: ctrl+z hands the terminal back to the shell.
	Suspend key.Binding
}

type namedBinding struct {
	action string
	b      *key.Binding
	desc   string
}

// actions lists the overridable bindings with their action names
// (config.KeyActions, in its order) and help descriptions.
func (k *keyMap) actions() []namedBinding {
	return []namedBinding{
		{"focus_next", &k.FocusNext, "next pane"},
		{"focus_prev", &k.FocusPrev, "prev pane"},
		{"up", &k.Up, "up"},
		{"down", &k.Down, "down"},
		{"page_up", &k.PageUp, "page up"},
		{"page_down", &k.PageDown, "page down"},
		{"top", &k.Top, "top"},
		{"bottom", &k.Bottom, "bottom"},
		{"open", &k.Open, "open"},
		{"back", &k.Back, "back"},
		{"collapse", &k.Collapse, "fold"},
		{"filter", &k.Filter, "filter"},
		{"parent", &k.Parent, "parent"},
		{"prev_sibling", &k.PrevSibling, "prev sibling"},
		{"next_sibling", &k.NextSibling, "next sibling"},
		{"first_child", &k.FirstChild, "first child"},
		{"broadcast", &k.Broadcast, "broadcast"},
		{"message", &k.Message, "message"},
		{"answer", &k.Answer, "answer"},
		{"skip", &k.Skip, "skip"},
		{"skip_all", &k.SkipAll, "skip all"},
		{"cancel", &k.Cancel, "cancel"},
		{"help", &k.Help, "help"},
		{"quit", &k.Quit, "quit"},
		{"send", &k.Send, "send"},
		{"toggle_target", &k.ToggleTarget, "all / subtree"},
		{"cycle_category", &k.CycleCategory, "category"},
		{"toggle_no_reply", &k.ToggleNoReply, "no-reply"},
		{"use_remembered", &k.UseRemembered, "use remembered"},
		{"dialog_skip", &k.DialogSkip, "skip (dialog)"},
		{"dialog_skip_all", &k.DialogSkipAll, "skip all (dialog)"},
		{"yes", &k.Yes, "yes"},
		{"no", &k.No, "no"},
	}
}

// newKeyMap returns the default bindings with overrides applied, and the
// override names it did not recognise (sorted), so the caller can say so.
// The names and default keys come from the config package, which checks a
// file's overrides against them (no key doing two things where both are
// read) before they get here.
func newKeyMap(overrides map[string][]string, g *glyphs) (keyMap, []string) {
	var k keyMap
	defaults := config.DefaultKeys()
	for _, a := range k.actions() {
		setKeys(a.b, defaults[a.action], a.desc, g)
	}
	k.ForceQuit = key.NewBinding(key.WithKeys(config.ForceQuitKey), key.WithHelp(config.ForceQuitKey, "quit now"))
	k.Suspend = key.NewBinding(key.WithKeys(config.SuspendKey), key.WithHelp(config.SuspendKey, "suspend"))

	var unknown []string
	byName := map[string]namedBinding{}
	for _, a := range k.actions() {
		byName[a.action] = a
	}
	for name, keys := range overrides {
		a, ok := byName[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		if len(keys) == 0 {
			continue
		}
		setKeys(a.b, keys, a.desc, g)
	}
	sort.Strings(unknown)
	return k, unknown
}

func setKeys(b *key.Binding, keys []string, desc string, g *glyphs) {
	labels := make([]string, len(keys))
	for i, k := range keys {
		labels[i] = g.key(k)
	}
	*b = key.NewBinding(key.WithKeys(keys...), key.WithHelp(strings.Join(labels, "/"), desc))
}

// uses reports whether an action is bound to the key named name.
func (k *keyMap) uses(name string) bool {
	for _, a := range k.actions() {
		if slices.Contains(a.b.Keys(), name) {
			return true
		}
	}
	return false
}

// label is the help text of a binding's keys, for hints inside the screen.
func label(b key.Binding) string { return b.Help().Key }

// pair is two bindings as one help item.
func pair(a, b key.Binding, desc string) key.Binding {
	keys := append(append([]string(nil), a.Keys()...), b.Keys()...)
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(label(a)+" "+label(b), desc))
}

// move is up and down as one help item.
func (k keyMap) move() key.Binding { return pair(k.Up, k.Down, "move") }

// ShortHelp is the footer of the dashboard.
func (k keyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.FocusNext, k.move(), k.Open, k.Collapse, k.Broadcast, k.Message, k.Answer, k.Skip, k.Cancel, k.Filter, k.Help, k.Quit}
}

// withoutActions drops the keys that act on the run (a read-only view
// refuses them) from a footer.
func (k keyMap) withoutActions(bs []key.Binding) []key.Binding {
	acts := map[string]bool{}
	for _, a := range []key.Binding{k.Broadcast, k.Message, k.Answer, k.Skip, k.SkipAll, k.Cancel} {
		acts[a.Help().Desc] = true
	}
	out := make([]key.Binding, 0, len(bs))
	for _, b := range bs {
		if !acts[b.Help().Desc] {
			out = append(out, b)
		}
	}
	return out
}

// without drops the given keys from a footer.
func without(bs []key.Binding, drop ...key.Binding) []key.Binding {
	gone := map[string]bool{}
	for _, d := range drop {
		gone[d.Help().Desc] = true
	}
	return slices.DeleteFunc(slices.Clone(bs), func(b key.Binding) bool { return gone[b.Help().Desc] })
}

// compactHelp is the footer when ShortHelp does not fit; where even that
// does not fit, the keys before help and quit go from the last. asking
// puts the answer key first, as the banner's question waits for it;
// without a question it is left out.
func (k keyMap) compactHelp(asking bool) []key.Binding {
	if asking {
		return []key.Binding{k.Answer, k.FocusNext, k.Open, k.Broadcast, k.Help, k.Quit}
	}
	return []key.Binding{k.FocusNext, k.Open, k.Broadcast, k.Help, k.Quit}
}

// footerDropOrder is the order in which a footer too wide for its keys
// leaves them out, the least needed first: moving and folding are plain to
// find, what acts on the run less so. The compact footer's keys are kept
// whatever this says.
func (k keyMap) footerDropOrder() []key.Binding {
	return []key.Binding{k.move(), k.Collapse, k.Parent, k.PrevSibling, k.NextSibling, k.FirstChild, k.Filter, k.Skip, k.Cancel,
		k.Back, k.Message, k.Open, k.Broadcast, k.FocusNext}
}

// FullHelp is every action, grouped as on the `?` sheet (which adds the
// headings).
func (k keyMap) FullHelp() [][]key.Binding {
	var cols [][]key.Binding
	for _, c := range k.helpColumns() {
		cols = append(cols, c.keys)
	}
	return cols
}

// sessionHelp is the footer while a transcript is open.
type sessionHelp struct{ k *keyMap }

func (h sessionHelp) ShortHelp() []key.Binding {
	k := h.k
	return []key.Binding{k.move(), h.toggle(), k.Parent, k.PrevSibling, k.NextSibling, k.FirstChild, k.Message, k.Cancel, k.Back, k.Help, k.Quit}
}

func (h sessionHelp) compactHelp() []key.Binding {
	k := h.k
	return []key.Binding{k.Back, h.toggle(), k.Parent, k.FirstChild, k.Help, k.Quit}
}

// toggle is the fold key as a transcript reads it: it opens or closes the
// selected message.
func (h sessionHelp) toggle() key.Binding {
	return key.NewBinding(key.WithKeys(h.k.Collapse.Keys()...), key.WithHelp(label(h.k.Collapse), "open/close"))
}
func (h sessionHelp) FullHelp() [][]key.Binding { return h.k.FullHelp() }

var (
	_ help.KeyMap = keyMap{}
	_ help.KeyMap = sessionHelp{}
)

// filterHelp is the footer while the filter of a pane (what it filters:
// "session", "broadcast") is edited.
func (k keyMap) filterHelp(what string) []key.Binding {
	keep := key.NewBinding(key.WithKeys(k.Send.Keys()...), key.WithHelp(label(k.Send), "keep "+what+" filter"))
	clearFilter := key.NewBinding(key.WithKeys(k.Back.Keys()...), key.WithHelp(label(k.Back), "clear "+what+" filter"))
	return []key.Binding{keep, clearFilter}
}

// filtering is the keymap with the filter key's help saying what it
// filters ("sessions", "broadcasts").
func (k keyMap) filtering(what string) keyMap {
	k.Filter.SetHelp(label(k.Filter), "filter "+what)
	return k
}

// dialogHelp is the footer while a dialog is open: only the keys that work
// there.
type dialogHelp struct {
	k    *keyMap
	kind dialogKind
	// remembered: the question has an earlier answer of the person's, which
	// UseRemembered fills in; without one that key does nothing.
	remembered bool
}

func (h dialogHelp) ShortHelp() []key.Binding {
	k := h.k
	back := key.NewBinding(key.WithKeys(k.Back.Keys()...), key.WithHelp(label(k.Back), "close"))
	switch h.kind {
	case dialogBroadcast:
		return []key.Binding{k.Send, k.ToggleTarget, k.CycleCategory, back}
	case dialogMessage:
		return []key.Binding{k.Send, k.ToggleNoReply, back}
	case dialogAnswer:
		// In the dialog "skip" needs no "(dialog)" qualifier.
		skip := key.NewBinding(key.WithKeys(k.DialogSkip.Keys()...), key.WithHelp(label(k.DialogSkip), "skip"))
		skipAll := key.NewBinding(key.WithKeys(k.DialogSkipAll.Keys()...), key.WithHelp(label(k.DialogSkipAll), "skip all"))
		if !h.remembered {
			return []key.Binding{k.Send, skip, skipAll, back}
		}
		return []key.Binding{k.Send, k.UseRemembered, skip, skipAll, back}
	case dialogConfirm:
		return []key.Binding{k.Yes, k.No}
	}
	return nil
}

// compactHelp is the dialog's footer where ShortHelp does not fit: the
// answer dialog keeps skip over skip all, which asks before it acts.
func (h dialogHelp) compactHelp() []key.Binding {
	full := h.ShortHelp()
	if h.kind == dialogAnswer {
		skipAll := h.k.DialogSkipAll.Keys()
		return slices.DeleteFunc(full, func(b key.Binding) bool { return slices.Equal(b.Keys(), skipAll) })
	}
	return full
}

func (h dialogHelp) FullHelp() [][]key.Binding { return h.k.FullHelp() }
