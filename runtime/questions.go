package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/prompts"
	"github.com/swarmdeck/swarmdeck/runtime/awake"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
	"github.com/swarmdeck/swarmdeck/runtime/store"
	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// Question statuses (DESIGN.md section 7).
const (
	QuestionOpen     = "open"
	QuestionAnswered = "answered"
	QuestionTimedOut = "timed_out"
	QuestionSkipped  = "skipped"
	QuestionClosed   = "closed"
)

// questionBoard holds the open questions of a run and the queue of those
// waiting for the human, who sees one at a time.
type questionBoard struct {
	r     *Run
	mu    sync.Mutex
	open  map[string]*question
	queue []string          // ids waiting for the human, oldest first
	ids   map[string]bool   // every question id of the run, open or closed
	ended map[string]string // id -> status, of the questions no longer open
}

type question struct {
	rec        store.Question
	asker      *Session
	options    []coordination.Option
	expected   map[string]string // responder (session id or "human") -> name shown to the asker
	responses  map[string]string // responder -> answer
	failed     map[string]string // responder -> why its shadow answer could not be had
	humanWait  bool              // the human is expected to answer
	humanState string            // "", answered, skipped, absent (nobody can answer where the run runs now)
	remembered string
	changed    chan struct{}
	cancel     context.CancelFunc
}

func newQuestionBoard(r *Run) *questionBoard {
	return &questionBoard{r: r, open: map[string]*question{}, ids: map[string]bool{}, ended: map[string]string{}}
}

// endedStatus is how a question that is no longer open ended ("" if not
// known).
func (b *questionBoard) endedStatus(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended[id]
}

// newIDLocked returns a question id not yet used in the run. b.mu must be
// held.
func (b *questionBoard) newIDLocked() string {
	id := shortID("q-", len(b.ids), func(id string) bool { return b.ids[id] })
	b.ids[id] = true
	return id
}

func (q *question) notify() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// complete reports whether every expected answer is in.
func (q *question) complete() bool {
	for who := range q.expected {
		if who == "human" {
			if q.humanWait && q.humanState == "" {
				return false
			}
			continue
		}
		_, answered := q.responses[who]
		_, failed := q.failed[who]
		if !answered && !failed {
			return false
		}
	}
	return true
}

func (b *questionBoard) info(q *question) *event.QuestionInfo {
	qi := &event.QuestionInfo{ID: q.rec.ID, FromSession: q.rec.FromSession, From: q.asker.display(), Question: q.rec.Question,
		MultiSelect: q.rec.MultiSelect, AllowHuman: q.humanWait, Status: q.rec.Status, HumanResponded: q.rec.HumanResponded,
		TimedOut: q.rec.TimedOut, Deadline: q.rec.Deadline, Remembered: q.remembered, Responses: map[string]string{},
		HumanAbsent: q.humanWait && q.humanState == "absent"}
	for _, o := range q.options {
		qi.Options = append(qi.Options, event.Option{ID: o.ID, Label: o.Label})
	}
	for who, text := range q.responses {
		qi.Responses[q.expected[who]] = text
	}
	return qi
}

// unsettled lists the open questions asked of the person that they have
// neither answered nor skipped: those waiting for them, oldest first, then
// those that nobody can answer where the run runs now.
func (b *questionBoard) unsettled() []event.QuestionInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	qs := b.unsettledLocked()
	out := make([]event.QuestionInfo, 0, len(qs))
	for _, q := range qs {
		out = append(out, *b.info(q))
	}
	return out
}

// unsettledLocked is unsettled's questions. b.mu must be held.
func (b *questionBoard) unsettledLocked() []*question {
	var out, absent []*question
	for _, id := range b.queue {
		if q := b.open[id]; q != nil {
			out = append(out, q)
		}
	}
	for _, q := range b.open {
		if q.humanWait && q.humanState == "absent" {
			absent = append(absent, q)
		}
	}
	sort.Slice(absent, func(i, j int) bool {
		a, c := absent[i].rec, absent[j].rec
		if !a.CreatedAt.Equal(c.CreatedAt) {
			return a.CreatedAt.Before(c.CreatedAt)
		}
		return a.ID < c.ID
	})
	return append(out, absent...)
}

func (b *questionBoard) dequeueLocked(id string) {
	for i, x := range b.queue {
		if x == id {
			b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
			return
		}
	}
}

// closeAll closes every open question (the run ended or stopped).
func (b *questionBoard) closeAll(reason string) {
	b.mu.Lock()
	qs := make([]*question, 0, len(b.open))
	for _, q := range b.open {
		qs = append(qs, q)
	}
	b.mu.Unlock()
	for _, q := range qs {
		if q.cancel != nil {
			q.cancel()
		}
	}
}

// recipients are the sessions that answer a question: every other running
// session, or those named.
func (s *Session) questionRecipients(specific []string) ([]*Session, error) {
	var all []*Session
	for _, k := range s.r.allSessions() {
		if k == s {
			continue
		}
		// A session spawned a moment ago that has not yet built its
		// history is asked too: its shadow answers from its task (see
		// transcript), as its spawn result already said it runs.
		if st := k.status(); st == StatusRunning || st == StatusWaiting {
			all = append(all, k)
		}
	}
	if len(specific) == 0 {
		return all, nil
	}
	var out []*Session
	chosen := map[*Session]bool{}
	for _, name := range specific {
		found := false
		for _, k := range all {
			if k.id == name || k.label == name || k.agent == name {
				if !chosen[k] {
					out = append(out, k)
					chosen[k] = true
				}
				found = true
			}
		}
		if !found && name != "human" && (name == s.id || name == s.label) {
			return nil, agents.Errorf("specific_agents names %q, which is you: ask others, not yourself (leave specific_agents out to ask every other running session)", name)
		}
		if !found && name != "human" {
			var names []string
			for _, k := range all {
				names = append(names, k.name())
			}
			if len(names) == 0 {
				names = []string{"none"}
			}
			return nil, agents.Errorf("specific_agents names %q, which is not another running session (running: %s)", name, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// answerNames gives each recipient of a question the name its answer goes
// under in the result: its label, or its id when it has none. Labels are
// unique only among siblings, so a label two recipients share, and one
// that reads "human", takes the id too ("w (s-071f)"): otherwise one
// answer would hide the other.
func answerNames(recips []*Session) map[string]string {
	count := map[string]int{"human": 1}
	for _, k := range recips {
		count[k.name()]++
	}
	names := make(map[string]string, len(recips))
	for _, k := range recips {
		n := k.name()
		if count[n] > 1 {
			n += " (" + k.id + ")"
		}
		names[k.id] = n
	}
	return names
}

func (h *host) Ask(ctx context.Context, c *agents.Call, req agents.AskRequest) (*agents.AskResult, error) {
	s := h.s()
	r := s.r
	cfg := r.e.Config().Coordination
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = cfg.BroadcastTimeout.D()
	}
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	recips, err := s.questionRecipients(req.SpecificAgents)
	if err != nil {
		return nil, err
	}
	// specific_agents chooses among the agents; allow_human_response alone
	// says whether the person is asked too ("human" among the names is
	// taken as a name, not needed).
	askHuman := req.AllowHuman && req.Kind == "ask_others"
	limit := cfg.MaxQuestionsPerSession
	b := r.questions
	raw, err := s.effect(c, "question", func(tx *store.Tx) (any, error) {
		s.mu.Lock()
		asked := s.questions
		s.mu.Unlock()
		if limit > 0 && asked >= limit {
			return nil, agents.Errorf("question limit reached: you have asked %d questions and the limit is %d per session (max_questions_per_session); decide with what you know", asked, limit)
		}
		q := &question{asker: s, options: req.Options, expected: map[string]string{}, responses: map[string]string{}, changed: make(chan struct{})}
		now := r.e.now()
		opts, _ := json.Marshal(req.Options)
		if len(req.Options) == 0 {
			opts = []byte("[]")
		}
		b.mu.Lock()
		id := b.newIDLocked()
		b.mu.Unlock()
		q.rec = store.Question{RunID: r.id, ID: id, FromSession: s.id, Kind: req.Kind, Question: req.Question,
			AllowHuman: askHuman, Options: opts, MultiSelect: req.MultiSelect, Status: QuestionOpen, CreatedAt: now, Deadline: now.Add(timeout)}
		names := answerNames(recips)
		for _, k := range recips {
			q.expected[k.id] = names[k.id]
			q.rec.Recipients = append(q.rec.Recipients, k.id)
		}
		if askHuman {
			q.expected["human"] = "human"
			q.humanWait = true
			r.mu.Lock()
			skipAll := r.rec.HumanSkipAll
			r.mu.Unlock()
			switch {
			case skipAll:
				// Skipped as it opens: stored so, as a skip of an open
				// question is.
				q.humanState = "skipped"
				q.rec.HumanSkipped = true
			case !r.human.Load():
				// Nobody can answer: a headless run without --control, or
				// one whose control input ended. The question goes to the
				// agents alone, and says so (see followHumanTx for a change
				// of this while it is open).
				q.humanState = "absent"
			}
			// Offered only when it fits: the same text may have been asked
			// before with other options, or as another type of question.
			if a, ok := r.e.store.RememberedAnswer(context.Background(), coordination.NormalizeQuestion(req.Question)); ok {
				if fit, ok := coordination.FitRemembered(a, req.Options, req.MultiSelect); ok {
					q.remembered = fit
				}
			}
		}
		if err := tx.UpsertQuestion(&q.rec); err != nil {
			return nil, err
		}
		b.mu.Lock()
		b.open[q.rec.ID] = q
		if q.humanWait && q.humanState == "" {
			b.queue = append(b.queue, q.rec.ID)
		}
		info := b.info(q)
		b.mu.Unlock()
		if _, err := tx.Emit(event.Event{Type: event.QuestionOpened, RunID: r.id, SessionID: s.id, Question: info}); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.questions++
		if q.humanWait && q.humanState == "" {
			s.waitingHuman++
		}
		s.mu.Unlock()
		return map[string]string{"question_id": q.rec.ID}, nil
	})
	if err != nil {
		return nil, err
	}
	var created struct {
		QuestionID string `json:"question_id"`
	}
	if err := json.Unmarshal(raw, &created); err != nil {
		return nil, err
	}
	b.mu.Lock()
	q := b.open[created.QuestionID]
	b.mu.Unlock()
	if q == nil {
		// Re-run after a crash of a question that had closed already: give
		// back what it got.
		return s.storedAnswers(ctx, created.QuestionID)
	}
	return s.awaitAnswers(ctx, q)
}

// awaitAnswers runs the shadow responders and waits for every answer, the
// deadline, or the asker's end. It never waits on another session's turn
// loop, so two sessions asking each other cannot deadlock.
func (s *Session) awaitAnswers(ctx context.Context, q *question) (*agents.AskResult, error) {
	r := s.r
	b := r.questions
	// The deadline is kept in awake time: a ctrl+z of the dashboard does
	// not close the question unanswered.
	qctx, cancel := awake.WithTimeoutCause(ctx, time.Until(q.rec.Deadline), context.DeadlineExceeded)
	defer cancel()
	b.mu.Lock()
	q.cancel = cancel
	var todo []*Session
	for who := range q.expected {
		if who == "human" {
			continue
		}
		if _, done := q.responses[who]; !done {
			if k := r.session(who); k != nil {
				todo = append(todo, k)
			}
		}
	}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.shadowAnswer(qctx, q, k)
		}()
	}
	s.beginBlocking("waiting for answers to " + q.rec.ID)
	done := false
	for {
		b.mu.Lock()
		done = q.complete()
		ch := q.changed
		b.mu.Unlock()
		if done {
			break
		}
		select {
		case <-ch:
			continue
		case <-qctx.Done():
		}
		break
	}
	// Ended before its answers and not by its deadline: the asker ended
	// (cancelled, failed) or the run did. Nobody timed out.
	closed := !done && (ctx.Err() != nil || !errors.Is(context.Cause(qctx), context.DeadlineExceeded))
	cancel()
	wg.Wait()
	s.endBlocking()
	if r.stopping.Load() {
		// The run is stopping, not the question ending: it stays open in
		// the store and a resumed run waits for it again.
		return nil, errInterrupted
	}
	// The asker may have ended meanwhile: the call's result still says
	// what became of its question.
	return s.closeQuestion(q, closed)
}

// closeQuestion records the outcome and tells the asker what arrived.
// closed is a question that ended because its asker or the run did.
func (s *Session) closeQuestion(q *question, closed bool) (*agents.AskResult, error) {
	r := s.r
	b := r.questions
	b.mu.Lock()
	res := &agents.AskResult{QuestionID: q.rec.ID, Responses: map[string]string{}, TimedOut: []string{}}
	var unanswered []string
	for who, name := range q.expected {
		if who == "human" {
			switch q.humanState {
			case "answered":
			case "skipped":
				res.Note = "the human skipped this question"
			case "absent":
				res.TimedOut = append(res.TimedOut, "human")
				res.Note = "no person is attached to answer (a headless run without --control, or whose --control input has ended)"
			default:
				res.TimedOut = append(res.TimedOut, "human")
			}
			continue
		}
		if _, ok := q.responses[who]; !ok {
			res.TimedOut = append(res.TimedOut, name)
			if why, failed := q.failed[who]; failed {
				unanswered = append(unanswered, name+" could not answer ("+why+")")
			}
		}
	}
	if len(unanswered) > 0 {
		sort.Strings(unanswered)
		res.Note = strings.TrimPrefix(res.Note+"; "+strings.Join(unanswered, "; "), "; ")
	}
	for who, text := range q.responses {
		res.Responses[q.expected[who]] = text
	}
	sort.Strings(res.TimedOut)
	res.HumanResponded = q.humanState == "answered"
	missing := 0
	for _, name := range res.TimedOut {
		if name != "human" || q.humanState != "absent" {
			missing++
		}
	}
	switch {
	case closed:
		res.Status = QuestionClosed
		res.TimedOut = []string{}
		res.Note = "the question was closed before every answer arrived: the asking session ended"
	case missing > 0:
		res.Status = QuestionTimedOut
	case len(res.Responses) == 0 && q.humanState != "skipped":
		// Nobody answered: the person was absent (a headless run without
		// --control), or there was nobody to ask. The note says which.
		res.Status = QuestionTimedOut
	case q.humanState == "skipped":
		res.Status = QuestionSkipped
	default:
		res.Status = QuestionAnswered
	}
	if len(q.expected) == 0 {
		res.Note = "no other session is running and the human was not asked: nobody could answer"
	}
	q.rec.Status = res.Status
	q.rec.TimedOut = res.TimedOut
	q.rec.HumanResponded = res.HumanResponded
	q.rec.ClosedAt = r.e.now()
	delete(b.open, q.rec.ID)
	b.ended[q.rec.ID] = res.Status
	b.dequeueLocked(q.rec.ID)
	info := b.info(q)
	rec := q.rec
	wasWaiting := q.humanWait && q.humanState == ""
	b.mu.Unlock()
	err := r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		if err := tx.UpsertQuestion(&rec); err != nil {
			return err
		}
		if wasWaiting {
			s.mu.Lock()
			s.waitingHuman--
			s.mu.Unlock()
		}
		_, err := tx.Emit(event.Event{Type: event.QuestionClosed, RunID: r.id, SessionID: s.id, Question: info})
		return err
	})
	return res, err
}

// shadowAnswer answers q on behalf of k: one tool-less call over a snapshot
// of k's history. k is not interrupted; it later finds a passive note of
// what was answered for it.
func (s *Session) shadowAnswer(ctx context.Context, q *question, k *Session) {
	r := s.r
	var opts []string
	for _, o := range q.options {
		opts = append(opts, o.ID+": "+o.Label)
	}
	// The question is the asker's text: the system prompt only says where
	// it is, and it comes escaped after the snapshot.
	var escaped []string
	for _, o := range opts {
		escaped = append(escaped, coordination.EscapeBody(o))
	}
	system, err := r.e.prompts.Shadow(prompts.ShadowData{Agent: k.display(), AskedBy: s.display(),
		Question: coordination.EscapeBody(q.rec.Question), Options: escaped, MultiSelect: q.rec.MultiSelect})
	if err != nil {
		r.e.log.Warn("shadow prompt", "err", err)
		return
	}
	user := transcript(k) + "\n\n" + coordination.FormatShadowQuestion(s.display(), q.rec.Question, opts)
	model := r.e.Model()
	if k.role.Model != "" {
		model = k.role.Model
	}
	req := llm.Request{Model: model, Messages: []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}}}
	b := r.questions
	noAnswer := func(err error) {
		if ctx.Err() != nil {
			return
		}
		r.e.log.Warn("shadow answer failed", "question", q.rec.ID, "for", k.id, "err", err)
		// No answer will come from k: the asker stops waiting for it now
		// rather than at the deadline.
		b.mu.Lock()
		if q.failed == nil {
			q.failed = map[string]string{}
		}
		q.failed[k.id] = err.Error()
		q.notify()
		b.mu.Unlock()
	}
	held, err := r.reserveTokens(ctx, &req)
	if err != nil {
		// The run's token budget is spent: the asker learns it from its
		// own next call.
		noAnswer(err)
		return
	}
	// Given back with the answer's usage below, or here if it is not
	// counted.
	defer func() { r.releaseTokens(held) }()
	select {
	case r.llmSem <- struct{}{}:
	case <-ctx.Done():
		return
	}
	resp, err := r.e.llm.Stream(ctx, req, nil)
	<-r.llmSem
	if err != nil {
		k.spentOnFailure(err) // for k, as an answer would have been
		noAnswer(err)
		return
	}
	answer := strings.TrimSpace(resp.Content)
	if answer == "" {
		answer = "(no answer)"
	}
	u := storeUsage(resp.Usage)
	r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		b.mu.Lock()
		if _, open := b.open[q.rec.ID]; !open {
			b.mu.Unlock()
			return nil
		}
		q.responses[k.id] = answer
		name := q.expected[k.id]
		q.notify()
		b.mu.Unlock()
		if err := tx.InsertResponse(r.id, q.rec.ID, store.Response{Responder: k.id, Name: name, Content: answer, Usage: u}); err != nil {
			return err
		}
		r.mu.Lock()
		r.addUsageLocked(u)
		r.releaseTokensLocked(held)
		held = 0
		run := r.rec
		r.mu.Unlock()
		if err := tx.UpdateRun(&run); err != nil {
			return err
		}
		// The answer was given for k: its tokens count to k, and so to k's
		// ancestors, so that the sessions add up to the run.
		if err := k.addUsageTx(tx, u); err != nil {
			return err
		}
		note := coordination.FormatShadowNote(q.rec.ID, s.display(), q.rec.Question, answer)
		_, err := k.deliverTx(tx, &store.InboxItem{Kind: "note", Content: note, Source: "system", FromSession: s.id})
		return err
	})
}

// addUsageTx adds tokens spent on the session's behalf outside its turns
// (a shadow answer) to its usage, stores it and says so with a
// session.status event.
func (s *Session) addUsageTx(tx *store.Tx, u store.Usage) error {
	s.mu.Lock()
	s.rec.Usage.Add(u)
	rec := s.rec
	info := s.infoLocked()
	s.mu.Unlock()
	if err := tx.UpsertSession(&rec); err != nil {
		return err
	}
	_, err := tx.Emit(event.Event{Type: event.SessionStatus, RunID: s.r.id, SessionID: s.id, Session: info})
	return err
}

// transcript renders the tail of a session's history as text for a shadow
// responder (tool calls in flight would make a chat request invalid): one
// escaped element per message, so that a file a tool read cannot add a
// message of its own to the snapshot.
func transcript(k *Session) string {
	k.mu.Lock()
	hist := append([]llm.Message(nil), k.history...)
	k.mu.Unlock()
	const maxChars = 12000
	var parts []string
	total := 0
	for i := len(hist) - 1; i >= 1 && total < maxChars; i-- {
		m := hist[i]
		text := m.Content
		if len(m.ToolCalls) > 0 {
			var names []string
			for _, c := range m.ToolCalls {
				names = append(names, c.Name+"("+textcut.Clip(c.Arguments, 200)+")")
			}
			text = strings.TrimSpace(text + "\ncalls: " + strings.Join(names, ", "))
		}
		text = textcut.Clip(text, 1500)
		total += len(text)
		parts = append(parts, coordination.FormatHistoryMessage(m.Role, text))
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	head := ""
	if len(hist) > 0 {
		head = "Your role and instructions:\n" + coordination.FormatInstructions(textcut.Clip(hist[0].Content, 1500)) + "\n\n"
	} else {
		// Not started yet: its task is all it has.
		head = "You are the " + k.agent + " agent of this swarm, and have just been given this task, not yet begun:\n" +
			coordination.FormatHistoryMessage(llm.RoleUser, textcut.Clip(k.task, 1500)) + "\n\n"
	}
	return head + "Your conversation so far:\n" + strings.Join(parts, "\n")
}

// answerHuman records the human's answer (or skip) to a question.
func (r *Run) answerHuman(ctx context.Context, id, text string, skip bool) error {
	b := r.questions
	b.mu.Lock()
	q := b.open[id]
	if q == nil {
		known := b.ids[id]
		b.mu.Unlock()
		if !known {
			return fmt.Errorf("no question %q in run %s", id, r.id)
		}
		switch status := b.endedStatus(id); status {
		case QuestionClosed:
			return fmt.Errorf("question %s is no longer open: it was closed when the session that asked it ended", id)
		case "":
			return fmt.Errorf("question %s is no longer open", id)
		default:
			return fmt.Errorf("question %s is no longer open: it was %s", id, strings.ReplaceAll(status, "_", " "))
		}
	}
	if !q.humanWait || q.humanState != "" {
		b.mu.Unlock()
		return fmt.Errorf("question %s is not waiting for you", id)
	}
	var ans coordination.Answer
	if !skip {
		if n := utf8.RuneCountInString(strings.TrimSpace(text)); n > maxHumanText {
			b.mu.Unlock()
			return fmt.Errorf("the answer is %d characters; the limit is %d", n, maxHumanText)
		}
		var err error
		if ans, err = coordination.ParseAnswer(text, q.options, q.rec.MultiSelect); err != nil {
			b.mu.Unlock()
			return err
		}
		if strings.TrimSpace(ans.Text) == "" {
			b.mu.Unlock()
			return fmt.Errorf("the answer is empty: type an answer, an option number, or skip")
		}
	}
	b.mu.Unlock()
	return r.e.store.Do(ctx, func(tx *store.Tx) error {
		b.mu.Lock()
		if q.humanState != "" {
			b.mu.Unlock()
			return nil
		}
		if skip {
			q.humanState = "skipped"
			q.rec.HumanSkipped = true
		} else {
			q.humanState = "answered"
			q.responses["human"] = ans.Text
			q.rec.HumanResponded = true
		}
		b.dequeueLocked(id)
		q.notify()
		info := b.info(q)
		if skip {
			info.Status = QuestionSkipped
		} else {
			info.Status = QuestionAnswered
		}
		asker := q.asker
		b.mu.Unlock()
		asker.mu.Lock()
		asker.waitingHuman--
		asker.mu.Unlock()
		if skip {
			// Stored now, not only when the question closes: it may still
			// wait for others when the process dies, and a resume must not
			// ask the person again.
			if err := tx.SkipHuman(r.id, id); err != nil {
				return err
			}
		} else {
			if err := tx.InsertResponse(r.id, id, store.Response{Responder: "human", Name: "human", Content: ans.Text}); err != nil {
				return err
			}
			if err := tx.RememberAnswer(coordination.NormalizeQuestion(q.rec.Question), ans.Text); err != nil {
				return err
			}
		}
		_, err := tx.Emit(event.Event{Type: event.QuestionAnswered, RunID: r.id, SessionID: asker.id, Question: info})
		return err
	})
}

// skipAll stops asking the human for the rest of the run.
func (r *Run) skipAll(ctx context.Context) error {
	r.mu.Lock()
	r.rec.HumanSkipAll = true
	rec := r.rec
	r.mu.Unlock()
	if err := r.e.store.Do(ctx, func(tx *store.Tx) error { return tx.UpdateRun(&rec) }); err != nil {
		return err
	}
	b := r.questions
	b.mu.Lock()
	ids := append([]string(nil), b.queue...)
	b.mu.Unlock()
	for _, id := range ids {
		if err := r.answerHuman(ctx, id, "", true); err != nil {
			continue
		}
	}
	return nil
}

func (h *host) Announce(ctx context.Context, c *agents.Call, message string) (*agents.AnnounceResult, error) {
	s := h.s()
	r := s.r
	raw, err := s.effect(c, "announce", func(tx *store.Tx) (any, error) {
		ts := r.e.now()
		content := coordination.FormatAnnouncement(s.display(), s.id, message, ts)
		rec := &store.Broadcast{Kind: event.KindAnnounce, FromSession: s.id, FromLabel: s.display(), Target: "all", Message: message, NoReply: true, CreatedAt: ts}
		n := 0
		shared, err := tx.ShareContent(content)
		if err != nil {
			return nil, err
		}
		for _, k := range r.allSessions() {
			if k == s || k.status() == StatusCancelled {
				continue
			}
			ok, err := k.deliverTx(tx, &store.InboxItem{Kind: "announce", Content: content, Source: "agent", FromSession: s.id, Shared: shared})
			if err != nil {
				return nil, err
			}
			if ok {
				n++
				rec.Recipients = append(rec.Recipients, store.Recipient{SessionID: k.id, Status: "delivered"})
			}
		}
		if err := r.recordFeedTx(tx, rec); err != nil {
			return nil, err
		}
		return agents.AnnounceResult{Status: "delivered", DeliveredTo: n}, nil
	})
	if err != nil {
		return nil, err
	}
	var res agents.AnnounceResult
	return &res, json.Unmarshal(raw, &res)
}

// storedAnswers rebuilds an ask_others result from the store.
func (s *Session) storedAnswers(ctx context.Context, id string) (*agents.AskResult, error) {
	qs, err := s.r.e.store.Questions(ctx, s.r.id)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		if q.ID != id {
			continue
		}
		res := &agents.AskResult{QuestionID: id, Status: q.Status, Responses: map[string]string{}, HumanResponded: q.HumanResponded,
			TimedOut: append([]string{}, q.TimedOut...)}
		for _, r := range q.Responses {
			res.Responses[r.Name] = r.Content
		}
		if q.Status == QuestionOpen {
			res.Status = QuestionClosed
			res.Note = "this question was closed when the run stopped; ask again if you still need answers"
		}
		return res, nil
	}
	return nil, fmt.Errorf("question %s is not in the store", id)
}
