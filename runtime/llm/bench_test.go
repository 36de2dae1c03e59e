package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/internal/rusage"
)

// benchStream is a typical turn as OpenAI streams it: 200 content deltas,
// two tool calls with their arguments in 20 fragments each, a finish chunk
// and a usage chunk.
func benchStream() []byte {
	var b strings.Builder
	line := func(v any) {
		j, _ := json.Marshal(v)
		b.WriteString("data: ")
		b.Write(j)
		b.WriteString("\n\n")
	}
	line(chunkOf(obj{"role": "assistant", "content": ""}, nil))
	for i := range 200 {
		line(contentChunk([]string{"The ", "plan ", "looks ", "fine; ", "I will ", "read\n"}[i%6]))
	}
	for i, name := range []string{"read_file", "task_broadcast"} {
		line(toolChunk(call(i, "call_"+name, name, "")))
		args := `{"path": "runtime/llm/client.go", "message": "found the \"retry\" loop", "limit": 200}`
		step := (len(args) + 19) / 20
		for j := 0; j < len(args); j += step {
			line(toolChunk(call(i, "", "", args[j:min(j+step, len(args))])))
		}
	}
	line(finishChunk("tool_calls"))
	line(obj{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "test-model", "choices": []obj{}, "usage": usageOf(5000, 400)})
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// BenchmarkStream measures the client's cost per call against a local
// server that writes a prepared stream: request encoding, HTTP, SSE
// framing, chunk decoding and accumulation.
func BenchmarkStream(b *testing.B) {
	body := benchStream()
	fs := newFakeServer(b, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	})
	c, _ := newTestClient(fs)
	req := userRequest(strings.Repeat("context ", 200))
	ctx := context.Background()
	onDelta := func(Delta) {}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	cpu := rusage.CPU()
	for b.Loop() {
		resp, err := c.Stream(ctx, req, onDelta)
		if err != nil || len(resp.ToolCalls) != 2 {
			b.Fatalf("resp = %+v, err = %v", resp, err)
		}
	}
	reportCPU(b, cpu)
}

// reportCPU adds the process CPU time per op since start (the server's
// share included for BenchmarkStream).
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 {
		b.ReportMetric(float64(rusage.CPU()-start)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkFeed measures decoding and accumulation alone, per stream.
func BenchmarkFeed(b *testing.B) {
	var lines [][]byte
	for l := range strings.SplitSeq(string(benchStream()), "\n\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok && d != "[DONE]" {
			lines = append(lines, []byte(d))
		}
	}
	a := &accumulator{onDelta: func(Delta) {}}
	var ch chunk
	b.ReportAllocs()
	cpu := rusage.CPU()
	for b.Loop() {
		a.reset()
		for _, l := range lines {
			if err := a.feed(&ch, l); err != nil {
				b.Fatal(err)
			}
		}
		if r := a.response(&Request{}); len(r.ToolCalls) != 2 {
			b.Fatal(r)
		}
	}
	reportCPU(b, cpu)
}

// agentTools are the tool specs swarmdeck's agents offer, as
// agents.NewRegistry() built them: a snapshot, because agents imports this
// package and an internal test cannot import it back.
func agentTools(tb testing.TB) []Tool {
	tb.Helper()
	data, err := os.ReadFile("testdata/agent_tools.json")
	if err != nil {
		tb.Fatal(err)
	}
	var tools []Tool
	if err := json.Unmarshal(data, &tools); err != nil {
		tb.Fatal(err)
	}
	return tools
}

// realisticRequest is a turn in the middle of a session: an 8 KB system
// prompt, 20 history messages with tool calls and results, and every tool
// of the agents package.
func realisticRequest(tb testing.TB) Request {
	var sys strings.Builder
	paragraphs := []string{
		"You are the planner of a swarm of agents working on one repository. Break the user's goal into tasks, hand them to sub-agents with `sessions_spawn`, and merge what they report.\n",
		"## Rules\n- Read before you write: `read_file` and `search_files` are cheap.\n- Keep every task small enough for one agent to finish in a few turns.\n- When a sub-agent asks a question, answer it from the shared context if you can — ask the human only when nobody knows.\n",
		"Results arrive as <task_result id=\"…\"> messages. A result that says \"blocked\" names what it waits for; unblock it or cancel the task.\n\tNever invent file contents; quote them.\n",
		"Shared context (read-only): {\"repo\": \"github.com/swarmdeck/swarmdeck\", \"goal\": \"make request encoding cheap\", \"owners\": [\"runtime\", \"agents\"], \"notes\": \"use Go 1.26; café ☕ is fine\"}\n",
	}
	for i := 0; sys.Len() < 8<<10; i++ {
		sys.WriteString(paragraphs[i%len(paragraphs)])
	}
	msgs := []Message{
		{Role: RoleSystem, Content: sys.String()},
		{Role: RoleUser, Content: "Find where the LLM client spends its CPU time and plan the fix. The profile says \"encoding/json.appendCompact\" is hot."},
	}
	files := []string{"runtime/llm/client.go", "runtime/llm/request.go", "runtime/llm/transport.go", "runtime/loop.go", "agents/tool.go", "agents/schema.go"}
	for i := 0; len(msgs) < 21; i++ {
		f := files[i%len(files)]
		id := fmt.Sprintf("call_%04d", i)
		msgs = append(msgs,
			Message{Role: RoleAssistant, Content: "Reading " + f + " next.", ToolCalls: []ToolCall{
				{ID: id, Name: "read_file", Arguments: `{"path": "` + f + `", "limit": 200}`},
			}},
			Message{Role: RoleTool, ToolCallID: id, Name: "read_file",
				Content: `{"path":"` + f + `","content":"package llm\n\nimport (\n\t\"bytes\"\n\t\"encoding/json\"\n)\n\n// chatRequest maps a Request to go-openai's form.\nfunc chatRequest(req *Request) openai.ChatCompletionRequest {\n\tmsgs := make([]openai.ChatCompletionMessage, len(req.Messages))\n\t// ...\n}\n","lines":200,"truncated":true}`},
		)
	}
	msgs = msgs[:21]
	temp := float32(0.2)
	return Request{Model: "qwen3:8b", Messages: msgs, Tools: agentTools(tb), Temperature: &temp, MaxTokens: 4096}
}

// BenchmarkEncode measures encoding the body of a realistic request: as
// go-openai did it (encoding/json over chatRequest, the cost before the
// client encoded bodies itself), and as the client does it with the tools
// as Request.Tools and as a ToolSet built once.
func BenchmarkEncode(b *testing.B) {
	req := realisticRequest(b)
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body, err := goOpenAIBody(&req, true)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
		}
	})
	encode := func(b *testing.B, req Request) {
		b.ReportAllocs()
		for b.Loop() {
			p := chatParams(&req)
			body, err := encodeBody(&req, p.Temperature)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(body.size(tailWithUsage))
			body.release()
		}
	}
	b.Run("Tools", func(b *testing.B) { encode(b, req) })
	withSet := req
	withSet.ToolSet, withSet.Tools = NewToolSet(req.Tools), nil
	b.Run("ToolSet", func(b *testing.B) { encode(b, withSet) })
}

// BenchmarkStreamRealistic is BenchmarkStream with the realistic request,
// against a server that discards the body instead of decoding it, so the
// client's share shows.
func BenchmarkStreamRealistic(b *testing.B) {
	body := benchStream()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	c := New(Config{BaseURL: srv.URL + "/v1"})
	req := realisticRequest(b)
	stream := func(b *testing.B, req Request) {
		ctx := context.Background()
		b.ReportAllocs()
		cpu := rusage.CPU()
		for b.Loop() {
			resp, err := c.Stream(ctx, req, nil)
			if err != nil || len(resp.ToolCalls) != 2 {
				b.Fatalf("resp = %+v, err = %v", resp, err)
			}
		}
		reportCPU(b, cpu)
	}
	b.Run("Tools", func(b *testing.B) { stream(b, req) })
	withSet := req
	withSet.ToolSet, withSet.Tools = NewToolSet(req.Tools), nil
	b.Run("ToolSet", func(b *testing.B) { stream(b, withSet) })
}

// BenchmarkSSEFilter measures the event stream filter alone, per stream,
// read the way go-openai reads it: one line at a time.
func BenchmarkSSEFilter(b *testing.B) {
	body := benchStream()
	r := bytes.NewReader(body)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		r.Reset(body)
		f := newSSEFilter(io.NopCloser(r))
		br := bufio.NewReaderSize(f, 4096)
		for {
			if _, err := br.ReadSlice('\n'); err != nil {
				break
			}
		}
		f.Close()
	}
}
