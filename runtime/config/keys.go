package config

import "slices"

// The dashboard's key table lives here rather than in the tui package: what
// ui.keys accepts is checked where the file is read, and the dashboard
// builds its keymap from this table (names and default keys), adding only
// what it shows: help texts and the grouping of the help sheet. So what is
// checked here is what it binds.

// keyActions is every action ui.keys may rebind, in the order of the help
// sheet, with its default keys.
var keyActions = []struct {
	name string
	keys []string
}{
	{"focus_next", []string{"tab"}},
	{"focus_prev", []string{"shift+tab"}},
	{"up", []string{"up", "k"}},
	{"down", []string{"down", "j"}},
	{"page_up", []string{"pgup"}},
	{"page_down", []string{"pgdown"}},
	{"top", []string{"home", "g"}},
	{"bottom", []string{"end", "G"}},
	{"open", []string{"enter"}},
	{"back", []string{"esc"}},
	{"collapse", []string{"space"}},
	{"filter", []string{"/"}},
	{"parent", []string{"p"}},
	{"prev_sibling", []string{"["}},
	{"next_sibling", []string{"]"}},
	{"first_child", []string{"c"}},
	{"broadcast", []string{"b"}},
	{"message", []string{"m"}},
	{"answer", []string{"a"}},
	{"skip", []string{"s"}},
	{"skip_all", []string{"S"}},
	{"cancel", []string{"x"}},
	{"help", []string{"?"}},
	{"quit", []string{"q"}},
	{"send", []string{"enter"}},
	{"toggle_target", []string{"tab"}},
	{"cycle_category", []string{"ctrl+t"}},
	{"toggle_no_reply", []string{"tab"}},
	{"use_remembered", []string{"tab"}},
	{"dialog_skip", []string{"ctrl+s"}},
	{"dialog_skip_all", []string{"ctrl+a"}},
	{"yes", []string{"y"}},
	{"no", []string{"n", "esc"}},
}

// KeyActions lists the dashboard actions that ui.keys may rebind, in the
// order of the help sheet. The TUI's keymap has one binding per name.
var KeyActions = func() []string {
	names := make([]string, len(keyActions))
	for i, a := range keyActions {
		names[i] = a.name
	}
	return names
}()

// DefaultKeys returns the keys of every action before ui.keys overrides
// them. The map and its lists are the caller's.
func DefaultKeys() map[string][]string {
	m := make(map[string][]string, len(keyActions))
	for _, a := range keyActions {
		m[a.name] = slices.Clone(a.keys)
	}
	return m
}

// ForceQuitKey always quits the dashboard at once, whatever is open, so that
// the person can get out.
const ForceQuitKey = "ctrl+c"
