package event

import "context"

// Controller is everything an observer of a run (the dashboard, the
// `--control` channel) can see and do. The runtime implements it; the
// dashboard depends on nothing else of the runtime.
type Controller interface {
	// Snapshot is the current state, for a first render. Events with a
	// sequence number above Snapshot.LastSeq follow on a subscription
	// opened before the snapshot was taken.
	Snapshot() Snapshot
	Subscribe(lossyBuffer int) *Subscription

	// ReadOnly reports a stored run opened for viewing: every action fails.
	ReadOnly() bool

	// Broadcast sends a human broadcast to every session ("all") or to the
	// subtree of a session (its id). category is discovery, warning,
	// context or blocker.
	Broadcast(ctx context.Context, text, target, category string) error
	// SendMessage messages one session; noReply delivers it passively.
	SendMessage(ctx context.Context, sessionID, text string, noReply bool) error
	// Answer answers an open question. text may name options by number or
	// id ("1", "2,3") or be free text.
	Answer(ctx context.Context, questionID, text string) error
	Skip(ctx context.Context, questionID string) error
	// SkipAll skips every open question and stops asking the human for the
	// rest of the run.
	SkipAll(ctx context.Context) error
	// Cancel cancels a session and its whole subtree.
	Cancel(ctx context.Context, sessionID string) error

	// Transcript reads messages of a session from the store, starting at
	// history index from, at most limit of them.
	Transcript(ctx context.Context, sessionID string, from, limit int) ([]MessageInfo, error)
	// Broadcasts reads the feed from the store: at most limit items older
	// than the item with id before ("" for the newest), oldest first.
	Broadcasts(ctx context.Context, before string, limit int) ([]BroadcastInfo, error)
}

// Snapshot is the state of a run at one moment.
type Snapshot struct {
	Run        RunInfo
	Sessions   []SessionInfo   // parents before children
	Broadcasts []BroadcastInfo // the most recent, oldest first
	// BroadcastTotal counts every feed item of the run, Broadcasts holding
	// only the most recent; 0 when not known (then len(Broadcasts)).
	BroadcastTotal int
	Plans          []PlanInfo
	Delegations    []DelegationInfo
	// Questions are the open questions asked of the person that they have
	// neither answered nor skipped, oldest first; HumanAbsent marks those
	// nobody can answer where the run runs now.
	Questions []QuestionInfo
	LastSeq   int64
}
