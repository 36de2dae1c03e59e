package runtime

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// A local Ollama that gives the model a window smaller than the agents'
// prompts cuts them without an error; the run says so once, and goes on.
func TestRunWarnsOfAContextWindowTooSmall(t *testing.T) {
	const small = `{"models":[{"name":"test-model:latest","model":"test-model:latest","context_length":2048}]}`
	tests := []struct {
		name    string
		dialect string // of the answers: "ollama" signs them as Ollama's
		ps      string // the body of GET /api/ps; "" for a server without it
		asked   bool
		warned  bool
		one     bool // the root answers at once: the run has one call
	}{
		{"window too small", "ollama", small, true, true, false},
		// A prompt cut short often leaves the model without its tools, and
		// the run ends on that one answer: it is warned all the same.
		{"one answer", "ollama", small, true, true, true},
		{"window large enough", "ollama", `{"models":[{"name":"test-model:latest","model":"test-model:latest","context_length":131072}]}`, true, false, false},
		{"another model loaded", "ollama", `{"models":[{"name":"llama3.1:latest","model":"llama3.1:latest","context_length":2048}]}`, true, false, false},
		{"no /api/ps", "ollama", "", true, false, false},
		{"answers not signed by Ollama", "openai", small, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner := fltPolicy()
			policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
				if tt.one {
					return scripted.Reply{Content: "Done."}
				}
				return inner.Reply(req)
			})
			srv := scripted.New(scripted.Config{Policy: policy, Dialect: tt.dialect})
			var asked atomic.Int32
			mux := http.NewServeMux()
			mux.Handle("/v1/", srv.Handler())
			mux.HandleFunc("GET /api/ps", func(w http.ResponseWriter, r *http.Request) {
				asked.Add(1)
				if tt.ps == "" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tt.ps)
			})
			hs := httptest.NewServer(mux)
			t.Cleanup(func() { hs.Close(); srv.Close() })
			e := recEngine(t, t.TempDir(), hs.URL+"/v1", nil)

			events, code := headless(t, e, "Summarize the README", nil)
			if code != 0 {
				t.Fatalf("exit status %d, want 0: the warning does not stop the run", code)
			}
			var warnings []string
			for _, ev := range events {
				if ev.Type == event.Error && strings.Contains(ev.Error, "context window") {
					warnings = append(warnings, ev.Error)
				}
			}
			if n, want := asked.Load(), map[bool]int32{true: 1, false: 0}[tt.asked]; n != want {
				t.Errorf("the server was asked %d times for its models, want %d", n, want)
			}
			if !tt.warned {
				if len(warnings) > 0 {
					t.Fatalf("warned %q", warnings)
				}
				return
			}
			if len(warnings) != 1 {
				t.Fatalf("%d warnings %q, want 1", len(warnings), warnings)
			}
			for _, want := range []string{"gives test-model a context window of 2048 tokens", "OLLAMA_CONTEXT_LENGTH=16384"} {
				if !strings.Contains(warnings[0], want) {
					t.Errorf("warning %q does not say %q", warnings[0], want)
				}
			}
		})
	}
}
