package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/llm"
)

// errBudgetSpent is returned by reserveTokens once the run has used its
// token budget: no model call starts after that.
var errBudgetSpent = errors.New("token budget spent")

// reserveTokens holds back the estimated prompt tokens of req against the
// run's token budget before a model call starts, and returns how many it
// held (0 without a budget). Without it, every session of a wide parallel
// spawn started its call while the budget still had room, and the run
// overshot it by all their tokens at once (15,475 were seen against
// 10,000). A call starts while the tokens used and held stay under the
// budget; otherwise it waits for the calls under way to settle, so a run
// ends over its budget by at most about one call. Once the budget is used
// up, the answer is errBudgetSpent. The hold is given back with
// releaseTokens, after the call's usage has been counted.
func (r *Run) reserveTokens(ctx context.Context, req *llm.Request) (int, error) {
	if r.e.Config().Limits.TokenBudgetPerRun <= 0 {
		return 0, nil
	}
	est := max(llm.PromptTokens(req), 1)
	var recheck *time.Timer
	defer func() {
		if recheck != nil {
			recheck.Stop()
		}
	}()
	for {
		// Read each time: a reload may raise the budget, lower it or lift
		// it while the call waits.
		budget := r.e.Config().Limits.TokenBudgetPerRun
		if budget <= 0 {
			return 0, nil
		}
		r.mu.Lock()
		used := r.rec.Usage.TotalTokens
		if used >= budget {
			r.mu.Unlock()
			return 0, errBudgetSpent
		}
		if used+r.held < budget {
			r.held += est
			r.mu.Unlock()
			return est, nil
		}
		if r.budgetFreed == nil {
			r.budgetFreed = make(chan struct{})
		}
		freed := r.budgetFreed
		r.mu.Unlock()
		// A reload wakes nobody: the wait looks at the budget again now and
		// then, as well as when a call gives its hold back.
		if recheck == nil {
			recheck = time.NewTimer(budgetRecheck)
		} else {
			recheck.Reset(budgetRecheck)
		}
		select {
		case <-freed:
		case <-recheck.C:
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		}
	}
}

// budgetRecheck is how often a call waiting for room in the token budget
// reads the budget again, for a reload that changed it.
const budgetRecheck = 500 * time.Millisecond

// releaseTokensLocked gives back a hold taken by reserveTokens and wakes
// the calls waiting for room. The caller holds r.mu and has counted the
// call's usage in the same critical section, so no waiter sees the room
// without the tokens that used it.
func (r *Run) releaseTokensLocked(held int) {
	if held == 0 {
		return
	}
	r.held -= held
	if r.budgetFreed != nil {
		close(r.budgetFreed)
		r.budgetFreed = nil
	}
}

// releaseTokens is releaseTokensLocked for a call whose usage is not
// counted: it failed, or its answer was dropped.
func (r *Run) releaseTokens(held int) {
	if held == 0 {
		return
	}
	r.mu.Lock()
	r.releaseTokensLocked(held)
	r.mu.Unlock()
}
