package llm

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
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
	cpu := processCPU()
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
func reportCPU(b *testing.B, start int64) {
	if start > 0 {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
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
	cpu := processCPU()
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
