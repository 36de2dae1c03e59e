package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// contextWatch notices a local model server whose context window is
// smaller than the prompts the run sends: Ollama cuts such a prompt without
// an error (see llm.Client.ServedContext), and the agents then work without
// the instructions and tools that were cut. The run says so once, as an
// error event, stored: on the dashboard's status line and in --json.
type contextWatch struct {
	asked  sync.Once
	window atomic.Int64 // tokens: 0 until the server has answered, -1 if it cannot tell
	warned atomic.Bool
}

// contextSizer is the part of the model client that can ask the server for
// the model's context window; the LLM client has it, test doubles need not.
type contextSizer interface {
	ServedContext(ctx context.Context, model string) (int, bool)
}

// watchContext looks at a request that has just been answered. The first
// answer signed by Ollama has the server asked for the model's window (the
// model is loaded now); later requests are measured against it. Other
// servers are never asked. The question is asked on the session's path,
// once per run (a local request of a millisecond, bounded by
// llm.servedWait), so that the warning comes before whatever the answer
// leads to: a run whose prompt was cut often ends with that one answer,
// and a warning after its end would never be shown.
func (r *Run) watchContext(sessionID string, req *llm.Request, resp *llm.Response) {
	w := &r.ctxWatch
	if w.warned.Load() {
		return
	}
	switch window := w.window.Load(); {
	case window > 0:
		if need := llm.PromptTokens(req); need > int(window) {
			r.warnContext(sessionID, need, int(window))
		}
	case window == 0:
		sizer, ok := r.e.llm.(contextSizer)
		if !ok || !resp.FromOllama {
			w.window.Store(-1)
			return
		}
		need := llm.PromptTokens(req)
		w.asked.Do(func() {
			window, ok := sizer.ServedContext(context.Background(), r.e.Model())
			if !ok {
				w.window.Store(-1)
				return
			}
			if need > window {
				r.warnContext(sessionID, need, window)
			}
			w.window.Store(int64(window))
		})
	}
}

// warnContext says, once per run, that a prompt of about need tokens went
// to a model given a window of window tokens.
func (r *Run) warnContext(sessionID string, need, window int) {
	if !r.ctxWatch.warned.CompareAndSwap(false, true) {
		return
	}
	r.mu.Lock()
	finished := r.finished
	r.mu.Unlock()
	if finished {
		return
	}
	suggest := 16384
	for suggest < 2*need {
		suggest *= 2
	}
	msg := fmt.Sprintf("the model server gives %s a context window of %d tokens, and a prompt of about %d tokens was sent to it: "+
		"Ollama cuts a prompt that does not fit without an error, so the agents work without the instructions and tools that were cut. "+
		"Give the model a larger window, e.g. start the server with OLLAMA_CONTEXT_LENGTH=%d ollama serve", r.e.Model(), window, need, suggest)
	r.e.log.Warn("prompt larger than the model's context window", "run", r.id, "session", sessionID, "window", window, "prompt_tokens", need)
	r.e.store.Go(func(tx *store.Tx) error {
		_, err := tx.Emit(event.Event{Type: event.Error, RunID: r.id, SessionID: sessionID, Error: msg})
		return err
	})
}
