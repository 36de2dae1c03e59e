package runtime

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/config"
)

// A run stopped while its orchestrator waits for its first answer, by an
// interrupt or by a model server that is down, still shows the prompt and
// the task the orchestrator was given: export and the dashboard read the
// store, and a session's first messages used to be written only with its
// first answer.
func TestStoppedRunKeepsTheMessagesNotYetWritten(t *testing.T) {
	for _, tc := range []struct {
		name string
		// handler answers the model calls; stop ends the run once a call
		// has arrived, when the server does not end it itself.
		handler func(arrived chan<- struct{}) http.HandlerFunc
		stop    bool
	}{
		{"interrupted", func(arrived chan<- struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				// Read as a model server does, so that the server notices
				// when the client goes away.
				io.Copy(io.Discard, r.Body)
				select {
				case arrived <- struct{}{}:
				default:
				}
				<-r.Context().Done()
			}
		}, true},
		{"server down", func(chan<- struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arrived := make(chan struct{}, 1)
			hs := httptest.NewServer(tc.handler(arrived))
			defer hs.Close()
			e := testEngine(t, hs, nil, func(c *config.Config) {
				c.Limits.MaxRetries = 0
			})
			run, err := e.Start(context.Background(), "count the launch tasks")
			if err != nil {
				t.Fatal(err)
			}
			if tc.stop {
				<-arrived
				run.Interrupt()
			}
			<-run.Done()
			x, err := e.Export(context.Background(), run.ID())
			if err != nil {
				t.Fatal(err)
			}
			if x.Run.Status != RunInterrupted {
				t.Fatalf("run %s, want interrupted", x.Run.Status)
			}
			root := x.Sessions[0]
			if len(root.Messages) != 2 || root.Messages[0].Role != "system" || root.Messages[1].Role != "user" ||
				root.Messages[1].Content != "count the launch tasks" {
				var roles []string
				for _, m := range root.Messages {
					roles = append(roles, m.Role)
				}
				t.Fatalf("the stopped orchestrator's messages: %v, want its system prompt and the goal", roles)
			}
		})
	}
}
