package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The dashboard's key table lives here rather than in the tui package: a
// file with a clashing or impossible key must be refused where it is read,
// with the line of the key, and only this package knows lines; a live reload
// has no dashboard to ask. The dashboard builds its keymap from this table
// (names and default keys) and adds only what it shows: help texts and the
// grouping of the help sheet. So what is checked here is what it binds.

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
// the person can get out; no action may take it.
const ForceQuitKey = "ctrl+c"

// SuspendKey hands the terminal back to the shell, as in any terminal
// program, whatever is open; no action may take it either.
const SuspendKey = "ctrl+z"

// keyContext is a place in the dashboard that reads key presses for a set of
// actions (tui/update_keys.go dispatches them): one key can serve only one
// action of a context, but the same key may do different things in
// different contexts, like tab that moves between panes and toggles a
// dialog's target.
type keyContext struct {
	name    string // as an error names it
	text    bool   // a text field takes the printable keys here
	actions []string
}

var keyContexts = []keyContext{
	// The dashboard and a session's transcript, help sheet open or not.
	{"the main view", false, []string{
		"focus_next", "focus_prev", "up", "down", "page_up", "page_down", "top", "bottom",
		"open", "back", "collapse", "filter", "parent", "prev_sibling", "next_sibling", "first_child",
		"broadcast", "message", "answer", "skip", "skip_all", "cancel", "help", "quit",
	}},
	{"the broadcast dialog", true, []string{"send", "back", "toggle_target", "cycle_category"}},
	{"the message dialog", true, []string{"send", "back", "toggle_no_reply"}},
	{"the answer dialog", true, []string{"send", "back", "use_remembered", "dialog_skip", "dialog_skip_all"}},
	{"a yes/no confirmation", false, []string{"yes", "no"}},
	// A broadcast read in full: the moving keys scroll it, open goes to
	// the sender's transcript.
	{"a broadcast's sheet", false, []string{"up", "down", "page_up", "page_down", "top", "bottom", "open", "back", "quit"}},
	{"the goal prompt", true, []string{"send", "back"}},
	{"a pane's filter", true, []string{"send", "back"}},
}

// keyModifiers in the order Bubble Tea writes them ("ctrl+alt+x", never
// "alt+ctrl+x"); a binding matches the written form only.
var keyModifiers = []string{"ctrl", "alt", "shift", "meta", "hyper", "super"}

// keyNames are the names Bubble Tea gives keys that type no character.
var keyNames = func() []string {
	names := strings.Fields(`enter tab backspace esc space up down left right begin find insert
		delete select pgup pgdown home end equal mul plus comma minus period div sep
		capslock scrolllock numlock printscreen pause menu mediaplay mediapause
		mediaplaypause mediareverse mediastop mediafastforward mediarewind medianext
		mediaprev mediarecord lowervol raisevol mute`)
	for i := 1; i <= 63; i++ {
		names = append(names, "f"+strconv.Itoa(i))
	}
	return names
}()

// keyAliases are other names people give keys, with the name Bubble Tea
// reports.
var keyAliases = map[string]string{
	"escape": "esc", "return": "enter", "pageup": "pgup", "pagedown": "pgdown",
	"del": "delete", "ins": "insert", "spacebar": "space",
}

// ctrlSent are ctrl keys whose byte is that of another key: a terminal that
// does not speak the kitty keyboard protocol sends ctrl+m as enter (both are
// CR), so Bubble Tea reports enter and a binding of ctrl+m never fires.
var ctrlSent = map[string]string{"m": "enter", "i": "tab", "[": "esc"}

// ctrlShared are ctrl keys that arrive as themselves but that terminals also
// send for another key, which would then do the action too.
var ctrlShared = map[string]string{
	"h": "it is the backspace character, which many terminals send for backspace",
	"j": "it is the newline character, which terminals send for enter or shift+enter in some setups",
}

// checkKey says what is wrong with a key name, or "" when Bubble Tea can
// report a key press by that name.
func checkKey(k string) string {
	const how = "write keys like q, G, ctrl+t, shift+tab, space, f1"
	if k == "" || strings.ContainsFunc(k, unicode.IsSpace) {
		return fmt.Sprintf("%q is not a key name (%s)", k, how)
	}
	base, mods := k, []string(nil)
	if i := strings.LastIndex(strings.TrimSuffix(k, "+"), "+"); i >= 0 {
		base, mods = k[i+1:], strings.Split(k[:i], "+")
	}
	for _, m := range mods {
		if !slices.Contains(keyModifiers, m) {
			return fmt.Sprintf("%q is not a key name: %q is not a modifier%s", k, m, choices(m, keyModifiers))
		}
	}
	if canon := canonicalMods(mods); !slices.Equal(canon, mods) {
		return fmt.Sprintf("%q never matches: write it %q (modifiers once each, in the order %s)",
			k, strings.Join(append(canon, base), "+"), strings.Join(keyModifiers, ", "))
	}
	if slices.Contains(keyNames, base) {
		return ""
	}
	r, size := utf8.DecodeRuneInString(base)
	if size != len(base) || r == utf8.RuneError || !unicode.IsPrint(r) {
		hint := how
		if s := keyAliases[base]; s != "" {
			hint = "write " + s
		} else if s := Suggest(base, keyNames); s != "" {
			hint = "did you mean " + s + "?"
		}
		return fmt.Sprintf("%q is not a key name (%s)", k, hint)
	}
	switch {
	case slices.Equal(mods, []string{"shift"}):
		// A shifted character arrives as the character it types.
		if u := unicode.ToUpper(r); u != r {
			return fmt.Sprintf("%q never matches: write the character shift types, %q", k, string(u))
		}
		return fmt.Sprintf("%q never matches: write the character shift types (like ? for shift+/)", k)
	case len(mods) > 0 && unicode.IsUpper(r):
		lower := strings.Join(canonicalMods(append(slices.Clone(mods), "shift")), "+") + "+" + string(unicode.ToLower(r))
		return fmt.Sprintf("%q never matches: with a modifier a letter is written in lower case, as in %q", k, lower)
	case len(mods) > 0 && mods[0] == "ctrl" && len(mods) <= 2 && (len(mods) == 1 || mods[1] == "alt"):
		// alt prefixes the same byte with esc: ctrl+alt+m arrives as alt+enter.
		if sent, ok := ctrlSent[base]; ok {
			return fmt.Sprintf("%q never fires: terminals send it as %s; choose another key",
				k, strings.Join(append(mods[1:len(mods):len(mods)], sent), "+"))
		}
		if why, ok := ctrlShared[base]; ok {
			return fmt.Sprintf("%q cannot be told apart from another key (%s); choose another key", k, why)
		}
	}
	return ""
}

// canonicalMods is mods once each, in Bubble Tea's order.
func canonicalMods(mods []string) []string {
	var out []string
	for _, m := range keyModifiers {
		if slices.Contains(mods, m) {
			out = append(out, m)
		}
	}
	return out
}

// types reports whether a key press types a character into a text field.
func types(k string) bool {
	if k == "space" {
		return true
	}
	r, size := utf8.DecodeRuneInString(k)
	return size == len(k) && unicode.IsPrint(r)
}

// validateKeys checks ui.keys: each key must be a key name Bubble Tea
// reports, and within a context no two actions may share a key, counting
// the defaults of the actions the file leaves alone.
func (c *Config) validateKeys(p *problems) {
	c.validateKeyClashes(p, c.validateKeyNames(p))
}

// validateKeyNames checks the actions and key names of ui.keys and returns
// the actions it rebinds.
func (c *Config) validateKeyNames(p *problems) map[string]bool {
	set := map[string]bool{}
	for _, action := range sortedKeys(c.UI.Keys) {
		key := joinKey("ui.keys", action)
		if !slices.Contains(KeyActions, action) {
			hint := ""
			if s := Suggest(action, KeyActions); s != "" {
				hint = "did you mean " + s + "? "
			}
			p.add(key, "unknown action (%svalid: %s)", hint, strings.Join(KeyActions, ", "))
			continue
		}
		keys := c.UI.Keys[action]
		if len(keys) == 0 {
			p.add(key, "no keys given (write it like %s: [ctrl+q])", action)
			continue
		}
		set[action] = true
		for i, k := range keys {
			at := fmt.Sprintf("%s[%d]", key, i)
			switch msg := checkKey(k); {
			case msg != "":
				p.addAt(key, at, "%s", msg)
			case k == ForceQuitKey:
				p.addAt(key, at, "%s always quits at once and cannot be bound to an action", k)
			case k == SuspendKey:
				p.addAt(key, at, "%s always suspends the dashboard to the shell and cannot be bound to an action", k)
			}
		}
	}
	return set
}

// validateKeyClashes refuses a key that would do two things in one context,
// or that a text field there could no longer type.
func (c *Config) validateKeyClashes(p *problems, set map[string]bool) {
	// The keys in effect: the file's where it sets them, else the defaults.
	effective := DefaultKeys()
	for action := range set {
		effective[action] = c.UI.Keys[action]
	}
	// at is the key path of k in the list of action, for its line.
	at := func(action, k string) string {
		key := joinKey("ui.keys", action)
		if i := slices.Index(c.UI.Keys[action], k); set[action] && i >= 0 {
			return fmt.Sprintf("%s[%d]", key, i)
		}
		return key
	}
	typing := map[string]bool{}     // action+" "+key reported as typing
	clashes := map[[2]string]bool{} // pairs of actions reported
	for _, ctx := range keyContexts {
		owner := map[string]string{} // key -> the first action of ctx using it
		for _, action := range ctx.actions {
			for _, k := range effective[action] {
				if checkKey(k) != "" || k == ForceQuitKey || k == SuspendKey {
					continue // reported above
				}
				if ctx.text && types(k) {
					if typing[action+" "+k] {
						continue
					}
					typing[action+" "+k] = true
					p.addAt(joinKey("ui.keys", action), at(action, k),
						"%q would no longer type %s in %s; use a key that types nothing, %s", k, typed(k), ctx.name, controlFor(k))
					continue
				}
				if does, edits := editKeys[k]; ctx.text && edits {
					if typing[action+" "+k] {
						continue
					}
					typing[action+" "+k] = true
					p.addAt(joinKey("ui.keys", action), at(action, k),
						"%q %s in %s, which it would no longer do; use a key that edits nothing there, like f2 or ctrl with a letter", k, does, ctx.name)
					continue
				}
				other, taken := owner[k]
				if !taken {
					owner[k] = action
					continue
				}
				pair := [2]string{min(other, action), max(other, action)}
				if other == action || clashes[pair] {
					continue
				}
				clashes[pair] = true
				// Reported at the action the file sets; at the later one in
				// the file when it sets both.
				a, b := action, other
				if !set[a] || (set[b] && p.line(at(b, k)) > p.line(at(a, k))) {
					a, b = b, a
				}
				whose, fix := "the default key of "+b, "rebind "+b+" too, or choose another key for "+a
				if set[b] {
					whose, fix = "set for "+b, "choose another key for one of them"
				}
				p.addAt(joinKey("ui.keys", a), at(a, k),
					"%q is also %s in %s, where one key can do only one thing; %s", k, whose, ctx.name, fix)
			}
		}
	}
}

// editKeys are the keys that edit a text field (bubbles' textinput, with
// tui/input.go), with what each does: an action of a context with a text
// field may not take them, or what is typed could not be mended. Keys that
// only repeat another (ctrl+a for home, ctrl+b for left) are left free, as
// dialog_skip_all takes ctrl+a by default.
var editKeys = map[string]string{
	"backspace":      "deletes the character before the cursor",
	"delete":         "deletes the character under the cursor",
	"left":           "moves the cursor left",
	"right":          "moves the cursor right",
	"home":           "moves the cursor to the start",
	"end":            "moves the cursor to the end",
	"ctrl+left":      "moves the cursor a word left",
	"ctrl+right":     "moves the cursor a word right",
	"alt+left":       "moves the cursor a word left",
	"alt+right":      "moves the cursor a word right",
	"ctrl+w":         "deletes the word before the cursor",
	"alt+backspace":  "deletes the word before the cursor",
	"ctrl+backspace": "deletes the word before the cursor",
	"alt+delete":     "deletes the word after the cursor",
	"ctrl+delete":    "deletes the word after the cursor",
	"ctrl+u":         "clears what is typed before the cursor",
	"ctrl+k":         "clears what is typed after the cursor",
	"ctrl+v":         "pastes",
}

// controlFor suggests a key that types nothing in place of k.
func controlFor(k string) string {
	if r, size := utf8.DecodeRuneInString(k); size == len(k) && unicode.IsLetter(r) {
		if c := "ctrl+" + string(unicode.ToLower(r)); checkKey(c) == "" {
			return "like " + c
		}
		return "like f2, or ctrl with another letter"
	}
	return "like f2, or ctrl with a letter"
}

func typed(k string) string {
	if k == "space" {
		return "a space"
	}
	return k
}
