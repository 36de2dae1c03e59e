package tui

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// Options configures the dashboard.
type Options struct {
	// Controller is the run to show. When nil, the dashboard first asks for a
	// goal and calls Start with it.
	Controller event.Controller
	// Start starts a run for a goal typed at the goal prompt.
	Start func(ctx context.Context, goal string) (event.Controller, error)
	// Keys overrides key bindings: action name (config.KeyActions) -> keys
	// (Bubble Tea key names such as "ctrl+t", "pgdown", "x"). Config
	// validation refuses a key bound to two actions read in the same place.
	Keys map[string][]string
	// Theme is auto (ask the terminal for its background), dark or light.
	Theme string
	// ResumeCommand is the command line that continues a run, for the quit
	// dialog and the status line; why is a failed run's reason ("" for
	// others), which may change the command (another model); nil gives
	// "swarmdeck resume RUN_ID".
	ResumeCommand func(runID, why string) string
	// Provider and Model say what will answer the run started at the goal
	// prompt, written as the header writes them, and Scripted that it is
	// the built-in scripted model; the prompt shows it before anything
	// starts.
	Provider, Model string
	Scripted        bool
	// Notices are lines for the status line from outside the run, such as
	// a configuration file reloaded or refused; nil: none.
	Notices <-chan Notice
	// ASCII draws the dashboard's frames, marks and arrows in ASCII, for a
	// terminal whose locale is not UTF-8 (Run sets it from the
	// environment: see ASCIILocale). What the agents write is shown as it
	// is.
	ASCII bool
}

// Notice is one line for the status line.
type Notice struct {
	Text string
	Err  bool
	// Topic names what the notice is about ("config", "prompts"). An
	// error with a topic stands: once the status line is free again (the
	// next line said expired or was dismissed), it comes back, until a
	// notice of the same topic that is not an error clears it. A file
	// that is still broken is not forgotten because something else was
	// said since.
	Topic string
}

type screen int

const (
	screenGoal screen = iota
	screenDashboard
	screenSession
)

// focus is the pane that receives navigation keys on the dashboard.
type focus int

const (
	focusSessions focus = iota
	focusBroadcasts
	focusPlans
	focusDelegations
	focusCount
)

// Tick intervals: fast while something animates, slow otherwise (elapsed
// times only change once a second).
const (
	tickFast = 120 * time.Millisecond
	tickSlow = time.Second

	statusTTL = 6 * time.Second
)

// Model is the dashboard: the single tea.Model of the program. Panes are
// plain structs inside it; Update decides where every message goes.
//
// Model is a handle on the dashboard's state: Bubble Tea passes the model by
// value on every message, and copying tens of kilobytes of styles and text
// inputs per event showed up as most of the cost of applying one.
type Model struct{ *model }

type model struct {
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc

	now    func() time.Time
	loc    *time.Location
	ticks  bool          // false in tests: no timers, deterministic frames
	window time.Duration // event coalescing window

	keys      keyMap
	suspender suspender
	styles    styles
	isDark    bool
	noColor   bool
	help      help.Model

	ctl          event.Controller
	sub          *event.Subscription
	readOnly     bool
	streamClosed bool
	st           *runState

	width, height int
	screen        screen
	focus         focus
	// back is where esc from a transcript returns when it was opened from
	// another pane than Sessions: that pane, and for a plan task the
	// tree's selection as it was (the Plans pane shows the selected
	// session's plan), for a broadcast its sheet.
	back backTo

	// held are the keys and pastes that came while the dashboard could not
	// take them (see busy), in order: they act once it can. connecting:
	// the run's snapshot is on its way, and nothing to act on is shown.
	held       []tea.Msg
	connecting bool

	// typedAfterRefusal: until then, typing keys are dropped. Set when a
	// key that opens a text box (b, m, a) is refused, so the text typed
	// after it without looking does not act as keys (q quits a view).
	typedAfterRefusal time.Time

	sessions    sessionsPane
	broadcasts  broadcastsPane
	plans       plansPane
	delegations delegationsPane
	transcript  transcriptPane

	dialog dialog
	// drafts keeps what was typed into a dialog closed with esc, and what
	// was chosen there, by the dialog it was typed into (draftKey), until
	// it is sent.
	drafts     map[string]draft
	showHelp   bool
	helpScroll sheetScroll
	detail     broadcastSheet
	status     statusLine
	runEnd     statusLine // why the run stopped and how it continues: the status line when nothing else is said
	standing   []Notice   // errors by topic still in force (see Notice.Topic), oldest first
	goal       goalPrompt

	frame   int
	crashed error
}

// statusLine is one line of feedback: the outcome of an action, an error,
// or a note that is neither (nothing to do, a navigation at its end).
type statusLine struct {
	text  string
	err   bool
	note  bool
	until time.Time // zero: stays until replaced or dismissed
	// ofDialog: the error is also shown in the open dialog, and goes with it.
	ofDialog bool
}

// New returns the dashboard model for opts. Run wraps it in a program; tests
// drive it directly.
func New(opts Options) Model {
	ctx, cancel := context.WithCancel(context.Background())
	return newModel(ctx, cancel, opts)
}

func newModel(ctx context.Context, cancel context.CancelFunc, opts Options) Model {
	keys, unknown := newKeyMap(opts.Keys, glyphSet(opts.ASCII))
	m := &model{
		opts:        opts,
		ctx:         ctx,
		cancel:      cancel,
		now:         time.Now,
		loc:         time.Local,
		ticks:       true,
		window:      coalesceWindow,
		keys:        keys,
		isDark:      opts.Theme != "light",
		help:        help.New(),
		ctl:         opts.Controller,
		st:          newRunState(),
		screen:      screenDashboard,
		sessions:    newSessionsPane(),
		broadcasts:  newBroadcastsPane(),
		transcript:  newTranscriptPane(),
		goal:        newGoalPrompt(),
		dialog:      dialog{},
		focus:       focusSessions,
		delegations: delegationsPane{},
		suspender:   newSuspender(),
	}
	m.transcript.st = m.st
	if opts.Controller == nil {
		m.screen = screenGoal
	}
	if g := glyphSet(opts.ASCII); g.ascii {
		m.help.ShortSeparator, m.help.Ellipsis = g.bullet, g.ellipsis
	}
	m.applyTheme()
	if m.screen == screenGoal {
		m.goal.input.Focus()
	}
	if len(unknown) > 0 {
		m.status = statusLine{text: "unknown key actions in the keys setting: " + strings.Join(unknown, ", "), err: true}
	}
	return Model{m}
}

func (m *model) applyTheme() {
	m.styles = newStyles(m.isDark, m.noColor, m.opts.ASCII)
	m.help.Styles = m.styles.help
	m.goal.input.SetStyles(m.styles.input)
	m.broadcasts.input.SetStyles(m.styles.input)
	m.sessions.input.SetStyles(m.styles.input)
	m.dialog.input.SetStyles(m.styles.input)
}

// Init subscribes to the run (or waits for a goal), asks the terminal for
// its background colour and starts the clock.
func (m Model) Init() tea.Cmd {
	return m.init()
}

func (m *model) init() tea.Cmd {
	var cmds []tea.Cmd
	if m.opts.Theme == "" || m.opts.Theme == "auto" {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	if m.ctl != nil {
		m.connecting = true
		cmds = append(cmds, connectCmd(m.ctl))
	}
	if m.opts.Notices != nil {
		cmds = append(cmds, waitNotice(m.ctx, m.opts.Notices))
	}
	if m.ticks {
		cmds = append(cmds, tickCmd(tickFast))
	}
	return tea.Batch(cmds...)
}

// Update applies one message. It never does I/O: anything slow is returned
// as a command and comes back as a message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	return m, m.update(msg)
}

func (m *model) update(msg tea.Msg) (cmd tea.Cmd) {
	defer func() {
		// A bug must not leave the person with a broken terminal and a stack
		// trace: log it, and quit cleanly with an error Run returns.
		if r := recover(); r != nil {
			slog.Error("tui: panic in Update", "panic", r, "stack", string(debug.Stack()))
			m.crashed = fmt.Errorf("the dashboard hit an internal error: %v", r)
			m.cancel()
			cmd = tea.Quit
		}
	}()

	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		// An open dialog follows the new width: an input sized for the old
		// one would wrap onto a second line, or leave half the sheet unused.
		if m.dialog.kind != dialogNone {
			resizeInput(&m.dialog.input, dialogInputWidth(m.width))
			if b := m.dialog.back; b != nil {
				resizeInput(&b.input, dialogInputWidth(m.width))
			}
		}
	case tea.ModeReportMsg:
		// The renderer places text by grapheme cluster from here on, for
		// the same answers (see graphemes): measure the frame the same way.
		if msg.Mode == ansi.ModeUnicodeCore && (msg.Value == ansi.ModeSet || msg.Value == ansi.ModeReset || msg.Value == ansi.ModePermanentlySet) &&
			!graphemes.Swap(true) {
			clear(m.transcript.cache)
		}
	case tea.BackgroundColorMsg:
		if m.opts.Theme == "" || m.opts.Theme == "auto" {
			m.isDark = msg.IsDark()
			m.applyTheme()
		}
	case resumedMsg:
		m.resumed(msg)
	case continuedMsg:
		m.continued()
	case tea.KeyPressMsg:
		if !m.hold(msg) {
			cmd = m.handleKey(msg)
		}
	case tea.PasteMsg:
		if !m.hold(msg) {
			cmd = m.handlePaste(msg)
		}
	case tea.MouseClickMsg:
		cmd = m.handleClick(msg.Mouse())
	case tea.MouseWheelMsg:
		cmd = m.handleWheel(msg.Mouse())
	case tickMsg:
		cmd = m.handleTick()
	case noticeMsg:
		m.keepStanding(Notice(msg))
		if msg.Err {
			m.setStatus(msg.Text, true)
		} else {
			m.setNote(msg.Text)
		}
		cmd = waitNotice(m.ctx, m.opts.Notices)
	case connectedMsg, eventsMsg, startedMsg:
		cmd = m.handleRuntime(msg)
	case actionDoneMsg, transcriptMsg, olderBroadcastsMsg, panicMsg:
		cmd = m.handleResult(msg)
	}
	if len(m.held) > 0 && !m.busy() {
		cmd = tea.Batch(cmd, m.replayHeld())
	}
	m.sync()
	return cmd
}

func (m *model) handleTick() tea.Cmd {
	m.frame++
	if !m.status.until.IsZero() && m.now().After(m.status.until) {
		m.status = statusLine{}
	}
	if !m.ticks {
		return nil
	}
	if c := m.suspender.seen(); c != m.suspender.counted {
		// A stop nothing here was told of: the machine slept.
		m.suspender.counted = c
		m.takeStops()
	}
	if m.st.running > 0 {
		return tickCmd(tickFast)
	}
	return tickCmd(tickSlow)
}

// backTo is where esc from a transcript goes (see model.back).
type backTo struct {
	set      bool
	focus    focus
	selected string               // the tree's selection to restore; "" keeps the transcript's
	plans    list                 // the Plans pane's cursor and scroll, with selected
	sheet    *event.BroadcastInfo // the broadcast sheet to open again
}

func (m *model) setStatus(text string, isErr bool) {
	m.status = statusLine{text: text, err: isErr}
	if !isErr {
		m.status.until = m.now().Add(statusTTL)
	}
}

// shownStatus is the status line to draw: what was said last, or, once it
// expired or was dismissed, why the run stopped, or else the latest
// standing error (a configuration file still refused). That reason and the
// command that continues the run are worth more than an empty line, and a
// person who pressed a key in the meantime must not lose them for good.
func (m *model) shownStatus() statusLine {
	if m.status.text != "" {
		return m.status
	}
	if !m.st.runActive() && m.runEnd.text != "" {
		return m.runEnd
	}
	if n := len(m.standing); n > 0 {
		return statusLine{text: m.standing[n-1].Text, err: true}
	}
	return m.status
}

// keepStanding records or clears the standing error of n's topic.
func (m *model) keepStanding(n Notice) {
	if n.Topic == "" {
		return
	}
	m.standing = slices.DeleteFunc(m.standing, func(s Notice) bool { return s.Topic == n.Topic })
	if n.Err {
		m.standing = append(m.standing, n)
	}
}

// setNote shows a neutral line: not a success, not an error.
func (m *model) setNote(text string) {
	m.status = statusLine{text: text, note: true, until: m.now().Add(statusTTL)}
}

// resumeCommand is the command line that continues the run shown.
func (m *model) resumeCommand() string {
	id := m.st.run.ID
	if m.opts.ResumeCommand != nil {
		why := ""
		if m.st.run.Status == "failed" {
			why = m.st.run.Error
		}
		return m.opts.ResumeCommand(id, why)
	}
	return "swarmdeck resume " + id
}

// quit ends the program and the event listener.
func (m *model) quit() tea.Cmd {
	m.cancel()
	return tea.Quit
}

// selectedSession is the session actions apply to: the open transcript's, or
// the one selected in the tree.
func (m *model) selectedSession() string {
	if m.screen == screenSession {
		return m.transcript.sessionID
	}
	return m.sessions.current()
}

// chrome is what this frame needs besides the panes, with a sheet of
// sheetRows.
func (m *model) chrome(sheetRows int) chrome {
	return chrome{
		banner:      len(m.st.questions)+len(m.st.humanAbsent) > 0,
		sheetRows:   sheetRows,
		dialog:      m.dialog.kind != dialogNone,
		scrolls:     m.dialog.kind == dialogNone && (m.detail.open || m.showHelp),
		statusRows:  len(m.statusLines(m.width)),
		footerRows:  1,
		sessionView: m.screen == screenSession,
	}
}

// layout computes this frame's rectangles and sizes the panes to them.
func (m *model) layout() (screenLayout, []string) {
	sheet := m.sheetLines(m.width)
	rows := len(sheet)
	// A read-only sheet scrolls in the rows it gets: its content is laid
	// out first, and framed once the layout knows its height. The sheet's
	// margin and borders take 3 cells; the borders and the closing line 3
	// rows.
	var detail, help []string
	if sheet == nil && m.width >= minWidth {
		switch {
		case m.detail.open:
			detail = m.broadcastContent(m.width - 3)
			rows = len(detail) + 3
		case m.showHelp:
			help = m.helpContent(m.width - 4) // a cell of margin each side
			rows = len(help) + 3
		}
	}
	l := computeLayout(m.width, m.height, m.chrome(rows))
	m.sessions.SetSize(l.sessions.w, l.sessions.h)
	m.broadcasts.SetSize(l.broadcasts.w, l.broadcasts.h)
	m.plans.SetSize(l.plans.w, l.plans.h)
	m.delegations.SetSize(l.delegations.w, l.delegations.h)
	m.transcript.SetSize(l.transcript.w, l.transcript.h)
	m.help.SetWidth(max(m.width-1, 0))
	switch {
	case detail != nil:
		return l, m.broadcastSheetLines(detail, l.sheet.w, l.sheet.h)
	case help != nil:
		return l, m.helpSheet(help, l.sheet.w, l.sheet.h)
	}
	if n := l.sheet.h; len(sheet) > n {
		// Keep the top border with its title and the end (a dialog's input
		// line, the bottom border); what gives way is the middle.
		if n >= 2 {
			sheet = append(sheet[:1:1], sheet[len(sheet)-(n-1):]...)
		} else {
			sheet = sheet[:n]
		}
	}
	return l, sheet
}

// sync runs after every Update: it sizes the panes and brings their derived
// state (visible rows, filter matches, scroll positions) up to date, so that
// View only reads.
func (m *model) sync() {
	if m.screen == screenGoal {
		return
	}
	l, _ := m.layout()
	if m.screen == screenDashboard && l.sheet.empty() && m.dialog.kind == dialogNone && l.pane(m.focus).empty() && !l.sessions.empty() {
		// The terminal shrank under the focused pane (a sheet or a dialog
		// takes rows from the panes only while it is open).
		m.focus = focusSessions
	}
	m.sessions.sync(m.st)
	m.plans.show(m.sessions.current())
	m.plans.sync(m.st)
	m.delegations.sync(m.st)
	m.broadcasts.sync(&m.st.feed, m.st.sessionName)
	if m.screen == screenSession {
		m.transcript.sync(&m.styles)
	}
	if m.dialog.kind == dialogAnswer {
		if _, _, ok := m.st.question(m.dialog.questionID); !ok && !m.dialog.sending {
			typed := strings.TrimSpace(m.dialog.input.Value()) != ""
			m.dialog = dialog{input: m.dialog.input}
			// The answer being typed, or about to be once the question is
			// read, must not act as keys: the S of "Sure" asks to skip all
			// questions and its y says yes; x, then the y of "yes",
			// cancels a session.
			m.typedAfterRefusal = m.now().Add(readingPause)
			if typed {
				m.setNote("that question was answered or closed elsewhere (timed out, or its asker ended): your answer was not sent")
			} else {
				m.setNote("that question was answered or closed elsewhere (timed out, or its asker ended)")
			}
		}
	}
}

// View renders the frame.
func (m Model) View() tea.View { return m.view() }

func (m *model) view() (v tea.View) {
	defer func() {
		if r := recover(); r != nil {
			slog.Error("tui: panic in View", "panic", r, "stack", string(debug.Stack()))
			v = tea.NewView(fmt.Sprintf("swarmdeck: internal error while drawing: %v\n\npress ctrl+c to quit", r))
			v.AltScreen = true
		}
	}()
	v = tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "swarmdeck"
	if g := oneLine(m.st.run.Goal); g != "" {
		v.WindowTitle = "swarmdeck" + m.styles.g.sep + m.styles.g.trunc(g, 60)
	}
	return v
}

func (m *model) render() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	if m.width < minWidth || m.height < minHeight {
		return m.renderTooSmall()
	}
	if m.screen == screenGoal {
		return m.renderGoal()
	}
	l, sheet := m.layout()
	c := &renderCtx{st: m.st, styles: &m.styles, keys: &m.keys, now: m.now(), loc: m.loc, frame: m.frame, readOnly: m.readOnly}
	on := func(f focus) *renderCtx {
		cc := *c
		cc.focused = m.screen == screenDashboard && m.focus == f && m.dialog.kind == dialogNone
		return &cc
	}
	blocks := []placed{
		{l.header, m.renderHeader(l.header.w)},
	}
	if !l.banner.empty() {
		blocks = append(blocks, placed{l.banner, []string{m.renderBanner(l.banner.w)}})
	}
	if m.screen == screenSession {
		tc := *c
		tc.focused = m.dialog.kind == dialogNone
		blocks = append(blocks,
			placed{l.transcript, m.transcript.Render(&tc)},
			placed{l.sessions, m.sessions.Render(on(focusCount))},
			placed{l.broadcasts, m.broadcasts.Render(on(focusCount))},
		)
	} else {
		blocks = append(blocks,
			placed{l.sessions, m.sessions.Render(on(focusSessions))},
			placed{l.broadcasts, m.broadcasts.Render(on(focusBroadcasts))},
			placed{l.plans, m.plans.Render(on(focusPlans))},
			placed{l.delegations, m.delegations.Render(on(focusDelegations))},
		)
	}
	if !l.sheet.empty() {
		blocks = append(blocks, placed{l.sheet, sheet})
	}
	if !l.status.empty() {
		blocks = append(blocks, placed{l.status, m.statusLines(l.status.w)})
	}
	blocks = append(blocks, placed{l.footer, []string{m.styles.g.fit(m.renderFooter(), l.footer.w)}})
	return compose(m.width, m.height, blocks)
}
