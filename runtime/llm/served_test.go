package llm

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestServedContextReadsOllamasList(t *testing.T) {
	const ps = `{"models":[{"name":"qwen2.5:7b","model":"qwen2.5:7b","context_length":8192},` +
		`{"name":"llama3.1:latest","model":"llama3.1:latest","size_vram":5333539264,"context_length":4096}]}`
	tests := []struct {
		name, body, model string
		want              int
		ok                bool
	}{
		{"asked without its tag", ps, "llama3.1", 4096, true},
		{"asked with its tag", ps, "llama3.1:latest", 4096, true},
		{"another tag", ps, "qwen2.5:7b", 8192, true},
		{"not loaded", ps, "mistral", 0, false},
		{"a tag that is not latest", ps, "qwen2.5", 0, false},
		{"no window said", `{"models":[{"name":"llama3.1:latest"}]}`, "llama3.1", 0, false},
		{"nothing loaded", `{"models":[]}`, "llama3.1", 0, false},
		{"not JSON", `<html>404</html>`, "llama3.1", 0, false},
		{"another shape", `{"data":[{"id":"llama3.1"}]}`, "llama3.1", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := servedContext([]byte(tt.body), tt.model)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("servedContext = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// The question goes to the server's root, beside its /v1, and only to a
// plain http:// server: a cloud API is never asked.
func TestServedContextAsksTheLocalServer(t *testing.T) {
	var paths []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		if r.URL.Path != "/api/ps" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"models":[{"name":"llama3.1:latest","model":"llama3.1:latest","context_length":4096}]}`))
	}))
	defer hs.Close()

	for _, base := range []string{hs.URL + "/v1", hs.URL + "/v1/"} {
		paths = nil
		c := New(Config{BaseURL: base})
		if n, ok := c.ServedContext(context.Background(), "llama3.1"); n != 4096 || !ok {
			t.Errorf("base %s: ServedContext = %d, %v; want 4096, true", base, n, ok)
		}
		if len(paths) != 1 || paths[0] != "GET /api/ps" {
			t.Errorf("base %s: requests %q, want one GET /api/ps", base, paths)
		}
	}
	paths = nil
	c := New(Config{BaseURL: hs.URL + "/v1", HTTPClient: hs.Client()}) // not the direct transport: a proxy, or https
	if n, ok := c.ServedContext(context.Background(), "llama3.1"); ok || len(paths) != 0 {
		t.Errorf("through another transport: ServedContext = %d, %v after %q; want nothing asked", n, ok, paths)
	}
	if n, ok := New(Config{BaseURL: "https://api.openai.com/v1"}).ServedContext(context.Background(), "gpt-4o"); ok {
		t.Errorf("OpenAI: ServedContext = %d, true", n)
	}
}

// Ollama signs its answers, and only an answer so signed has the client
// ask Ollama's own API.
func TestAnswerSignedByOllama(t *testing.T) {
	for _, tt := range []struct {
		fingerprint string
		want        bool
	}{{`"fp_ollama"`, true}, {`"fp_44709d6fcb"`, false}, {`null`, false}, {"", false}} {
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fp := ""
			if tt.fingerprint != "" {
				fp = `"system_fingerprint":` + tt.fingerprint + `,`
			}
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: {\"model\":\"llama3.1\",%s\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n", fp)
			fmt.Fprintf(w, "data: {\"model\":\"llama3.1\",%s\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", fp)
		}))
		resp, err := New(Config{BaseURL: hs.URL + "/v1"}).Stream(context.Background(),
			Request{Model: "llama3.1", Messages: []Message{{Role: RoleUser, Content: "hello"}}}, nil)
		hs.Close()
		if err != nil {
			t.Fatalf("fingerprint %s: %v", tt.fingerprint, err)
		}
		if resp.FromOllama != tt.want {
			t.Errorf("fingerprint %s: FromOllama = %v, want %v", tt.fingerprint, resp.FromOllama, tt.want)
		}
	}
}
