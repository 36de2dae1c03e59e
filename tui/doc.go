// Package tui is swarmdeck's terminal dashboard.
//
// It owns one Bubble Tea model (Model) that shows a run's session tree,
// broadcast feed, task plans, delegations and the agents' questions to the
// person, and turns the person's keys into calls on event.Controller. It
// depends on the runtime only through package runtime/event, so it can be
// driven by the real runtime, a stored run opened read-only, or the fake in
// tui/tuitest; from package coordination it takes only the pure reading of
// the messages the runtime makes of what the person sends.
//
// Layout of the package, following STYLE.md:
//   - model.go: Options, the Model, Init, the Update dispatch, View;
//   - update_keys.go, update_mouse.go, update_runtime.go, update_results.go:
//     Update split by message family (keys, mouse, runtime events, results
//     of controller calls);
//   - commands.go and listen.go: every tea.Cmd that does I/O, and the
//     coalescing event listener;
//   - state.go: the run as applied from the snapshot and events (no Bubble
//     Tea), with the session index and incremental roll-ups;
//   - pane_*.go: the panes, plain structs with SetSize, sync and Render;
//   - layout.go: the pure function from terminal size to rectangles;
//   - chrome.go, dialog.go, goal.go: header, banner, footer, dialog sheets
//     and the goal prompt;
//   - sheet.go, help.go, sheet_broadcast.go: the read-only sheets that
//     scroll: the `?` keys and one broadcast in full;
//   - keys.go, theme.go, glyphs.go, frame.go, format.go: the keymap
//     (help.KeyMap), the theme, the glyphs it draws with (UTF-8, or ASCII
//     under a locale that is not UTF-8), frames and composition, text
//     helpers;
//   - run.go: Run, the program on the real terminal.
//
// tui/tuitest holds a fake event.Controller and deterministic run states.
package tui
