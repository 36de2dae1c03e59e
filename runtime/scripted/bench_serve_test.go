package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/swarmdeck/swarmdeck/runtime/internal/rusage"
)

// benchTools is a tool list the size of the runtime's: 25 tools with a
// description and a JSON schema each, the bulk of every request.
func benchTools() []openai.Tool {
	var tools []openai.Tool
	for i := range 25 {
		schema := fmt.Sprintf(`{"type":"object","properties":{"task_id":{"type":"string","description":"The id of the session, e.g. \"s-3f9a\"."},`+
			`"message":{"type":"string","maxLength":2000,"description":"What to say; keep it short."},"category":{"type":"string","enum":["discovery","warning","context","blocker"]},`+
			`"target":{"type":"string","enum":["all","children","siblings"]},"n%d":{"type":"integer","minimum":0}},"required":["task_id"]}`, i)
		tools = append(tools, openai.Tool{Type: "function", Function: &openai.FunctionDefinition{
			Name:        fmt.Sprintf("tool_%02d", i),
			Description: strings.Repeat("Does one thing for the swarm and returns JSON; errors come back as {\"error\": \"...\"}. ", 3),
			Parameters:  json.RawMessage(schema),
		}})
	}
	return tools
}

// benchTurnBody is the request of a bench leaf's second turn, as the
// runtime sends it: a 3 KB system prompt, the task, one tool round trip and
// an injected broadcast.
func benchTurnBody(b *testing.B) []byte {
	sys := "You are the researcher agent of a swarmdeck swarm.\nYour task id: s-3f9a\nYour label: leaf-3\n\n" +
		strings.Repeat("Work on your task, share discoveries with `task_broadcast`, and answer with a short final report.\n", 30)
	req := openai.ChatCompletionRequest{
		Model:         ModelID,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Tools:         benchTools(),
		Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: sys},
			{Role: "user", Content: BenchGoal(1, 10, 3, 1)},
			{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "call_1", Type: "function", Function: openai.FunctionCall{
				Name: "task_broadcast", Arguments: `{"category":"discovery","target":"siblings","message":"bench broadcast 1"}`}}}},
			{Role: "tool", ToolCallID: "call_1", Content: `{"status":"success","delivered_to":9,"skipped":0,"target":"siblings"}`},
			{Role: "user", Content: `<sibling_broadcast from="researcher (leaf-2)" task_id="s-3f9b" category="discovery" timestamp="2026-01-26T19:30:00Z">bench broadcast 1</sibling_broadcast>`},
		},
	}
	body, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

type discardWriter struct {
	h http.Header
	n int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// BenchmarkServeTurn measures the server's CPU cost of one LLM turn: read
// and decode the request, run the bench policy, frame and write the stream.
// No network: the handler is called directly.
func BenchmarkServeTurn(b *testing.B) {
	body := benchTurnBody(b)
	s := New(Config{Policy: Bench()})
	h := s.Handler()
	rd := bytes.NewReader(body)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "/v1/chat/completions", nil)
	if err != nil {
		b.Fatal(err)
	}
	w := &discardWriter{h: http.Header{}}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := rusage.CPU()
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		req.ContentLength = int64(len(body))
		clear(w.h)
		w.n = 0
		h.ServeHTTP(w, req)
	}
	reportCPU(b, cpu)
	if w.n == 0 || s.Stats().Completed == 0 {
		b.Fatal("nothing served")
	}
}

// BenchmarkRoundTrip is one streamed turn through the real client over
// loopback: the server plus the go-openai client and net/http on both
// sides, which is what the runtime pays per turn.
func BenchmarkRoundTrip(b *testing.B) {
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(benchTurnBody(b), &req); err != nil {
		b.Fatal(err)
	}
	s := New(Config{Policy: Bench()})
	base, err := s.Start("")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, tr := newClient(base)
	defer tr.CloseIdleConnections()
	b.ReportAllocs()
	cpu := rusage.CPU()
	for b.Loop() {
		st, err := c.CreateChatCompletionStream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := st.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		st.Close()
	}
	reportCPU(b, cpu)
}

// reportCPU adds the process CPU time per operation since start, which
// includes the GC and, for round trips, both ends of the connection.
func reportCPU(b *testing.B, start time.Duration) {
	if start == 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(rusage.CPU()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkDemoRootTurn is the demo policy's cost on a long root
// conversation (it re-reads the whole history every turn).
func BenchmarkDemoRootTurn(b *testing.B) {
	c := newConvo(b, sysPrompt("orchestrator", "s-root", ""), goal)
	rootThroughStep4(b, c)
	c.answer(map[string]string{"ask_others": askRes, "sessions_spawn": writerRes})
	c.turn()
	c.inject(taskResult("s-r1", "researcher", "completed", strings.Repeat("- finding\n", 20)))
	req := &Request{Messages: c.msgs}
	b.ReportAllocs()
	for b.Loop() {
		Demo().Reply(req)
	}
}
