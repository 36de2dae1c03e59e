package llm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// modelServer refuses every chat call with refusal and answers
// GET /v1/models with list (a status other than 200 when list is "").
type modelServer struct {
	*httptest.Server
	listed atomic.Int32
	auth   atomic.Value // the Authorization header of the last list request
}

func newModelServer(t *testing.T, refusal func(w http.ResponseWriter), list string) *modelServer {
	t.Helper()
	ms := &modelServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		refusal(w)
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		ms.listed.Add(1)
		ms.auth.Store(r.Header.Get("Authorization"))
		if list == "" {
			http.Error(w, "no list here", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, list)
	})
	ms.Server = httptest.NewServer(mux)
	t.Cleanup(ms.Close)
	return ms
}

func ollamaMissing(w http.ResponseWriter) {
	jsonError(w, http.StatusNotFound, "api_error", "", `model "gpt-4o-mini" not found, try pulling it first`)
}

// A model the server does not have fails the call with the models the
// server lists, those of the same family first, so the user can pick one;
// the server's own message stays.
func TestUnknownModelNamesTheServersModels(t *testing.T) {
	list := `{"object":"list","data":[{"id":"qwen2.5:7b"},{"id":"nomic-embed-text"},{"id":"llama3.1:8b"},{"id":"llama3.2:3b"}]}`
	for _, tc := range []struct {
		name, model string
		refusal     func(w http.ResponseWriter)
		list        string
		want        string // "" when the default hint must stand
	}{
		{"ollama 404", "llama3", ollamaMissing, list,
			`(the server has no model "llama3" but serves 4 models: llama3.1:8b, llama3.2:3b, qwen2.5:7b, nomic-embed-text; pick one with --model)`},
		{"one model", "gpt-4o-mini", ollamaMissing, `{"data":[{"id":"qwen2.5:7b"}]}`,
			`(the server has no model "gpt-4o-mini" but serves qwen2.5:7b; pick one with --model)`},
		{"openrouter 400", "openai/gpt-9", func(w http.ResponseWriter) {
			jsonError(w, http.StatusBadRequest, "", "", "openai/gpt-9 is not a valid model ID")
		}, `{"data":[{"id":"openai/gpt-4o"},{"id":"anthropic/claude-sonnet-4"},{"id":"openai/gpt-4o"}]}`,
			`(the server has no model "openai/gpt-9" but serves 2 models: openai/gpt-4o, anthropic/claude-sonnet-4; pick one with --model)`},
		{"listed after all", "llama3.1:8b", ollamaMissing, list, ""},
		{"no list", "llama3", ollamaMissing, "", ""},
		{"not a list", "llama3", ollamaMissing, `{"data":"none"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms := newModelServer(t, tc.refusal, tc.list)
			c := New(Config{BaseURL: ms.URL + "/v1", APIKey: "sk-test-key", ModelHint: "pick one with --model"})
			req := userRequest("hi")
			req.Model = tc.model
			_, err := c.Stream(t.Context(), req, nil)
			e := asError(t, err)
			if ms.listed.Load() != 1 {
				t.Fatalf("the model list was asked for %d times, want once", ms.listed.Load())
			}
			if got := ms.auth.Load(); got != "Bearer sk-test-key" {
				t.Errorf("the list was asked for with Authorization %q", got)
			}
			if e.Retryable || e.Attempts != 1 {
				t.Errorf("error %+v was retried", e)
			}
			want := tc.want
			if want == "" {
				want = "(check the base URL and the model name)"
				if strings.Contains(e.Message, "not a valid model") {
					want = ")" // a refused request has no default hint
				}
			}
			if !strings.HasSuffix(e.Error(), want) {
				t.Errorf("error = %q\nwant it to end %q", e.Error(), want)
			}
		})
	}
}

// Other failures do not ask for the list: a missing endpoint has its own
// hint, and a refused key or a bad request says nothing about the model.
func TestOtherFailuresDoNotListModels(t *testing.T) {
	for name, refusal := range map[string]func(w http.ResponseWriter){
		"missing endpoint": func(w http.ResponseWriter) { http.NotFound(w, nil) },
		"bad key": func(w http.ResponseWriter) {
			jsonError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided")
		},
		"bad request": func(w http.ResponseWriter) {
			jsonError(w, http.StatusBadRequest, "invalid_request_error", "", "messages: unknown role")
		},
	} {
		t.Run(name, func(t *testing.T) {
			ms := newModelServer(t, refusal, `{"data":[{"id":"qwen2.5:7b"}]}`)
			c := New(Config{BaseURL: ms.URL + "/v1"})
			_, err := c.Stream(t.Context(), userRequest("hi"), nil)
			asError(t, err)
			if n := ms.listed.Load(); n != 0 {
				t.Errorf("the model list was asked for %d times after %v", n, err)
			}
		})
	}
}

// A server that never answers the list does not hold the failure back
// once the caller gives up (nor past modelsWait otherwise).
func TestModelListThatHangsIsBounded(t *testing.T) {
	asked := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { ollamaMissing(w) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		close(asked)
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL + "/v1"})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream(ctx, userRequest("hi"), nil)
		done <- err
	}()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("the call ended without asking for the list: %v", err)
	}
	cancel()
	if e := asError(t, <-done); e.Kind != NotFound || !strings.HasSuffix(e.Error(), "(check the base URL and the model name)") {
		t.Fatalf("error = %v, want the 404 with its default hint", e)
	}
}

func TestModelsHint(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("m%02d", i)
	}
	for _, tc := range []struct {
		model  string
		models []string
		want   string
	}{
		{"x", nil, ""},
		{"x", []string{"x"}, ""},
		{"x", many, `the server has no model "x" but serves 12 models: m00, m01, m02, m03, m04, m05, m06, m07 and 4 more`},
		{"org/Llama-3@latest", []string{"a", "meta/llama-3-8b", "b"}, `the server has no model "org/Llama-3@latest" but serves 3 models: meta/llama-3-8b, a, b`},
		{"", []string{"a"}, `the server has no model "" but serves a`},
	} {
		if got := modelsHint(tc.model, tc.models); got != tc.want {
			t.Errorf("modelsHint(%q, %q) = %q, want %q", tc.model, tc.models, got, tc.want)
		}
	}
}

func TestParseModels(t *testing.T) {
	for body, want := range map[string][]string{
		`{"data":[{"id":"a"},{"id":""},{"id":"b"},{"id":"a"}]}`:     {"a", "b"},
		`{"models":[{"name":"llama3.1:8b","model":"llama3.1:8b"}]}`: {"llama3.1:8b"},
		`{"data":[{"id":"a\nb"}]}`:                                  {"a b"},
		`[]`:                                                        nil,
		`not json`:                                                  nil,
	} {
		if got := parseModels([]byte(body)); !slices.Equal(got, want) {
			t.Errorf("parseModels(%s) = %q, want %q", body, got, want)
		}
	}
}
