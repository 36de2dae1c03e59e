package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/internal/rusage"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
)

// memModel answers in memory, so that benchmarks measure the runtime's own
// cost: the store, events, tools, request building, with no model time and
// no HTTP.
type memModel struct {
	reply func(req llm.Request) *llm.Response
	calls atomic.Int64
}

func (m *memModel) Stream(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (*llm.Response, error) {
	m.calls.Add(1)
	resp := m.reply(req)
	resp.Usage = llm.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}
	resp.FinishReason = "stop"
	return resp, nil
}

func memRole(req llm.Request) string {
	first, _, _ := strings.Cut(req.Messages[0].Content, "\n")
	first = strings.TrimPrefix(first, "You are the ")
	role, _, _ := strings.Cut(first, " ")
	return role
}

func memTurns(req llm.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

func memCall(name string, args any) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{ID: fmt.Sprintf("c-%d", memCallSeq.Add(1)), Name: name, Arguments: string(b)}
}

var memCallSeq atomic.Int64

func benchEngine(b *testing.B, reply func(llm.Request) *llm.Response) *Engine {
	b.Helper()
	dir := b.TempDir()
	cfg := config.Defaults()
	cfg.Workspace = dir
	cfg.LogFile = filepath.Join(dir, "log")
	cfg.Limits.MaxTurnsPerSession = 1000
	cfg.Limits.MaxSessionsPerRun = 1 << 20
	cfg.Limits.MaxConcurrentSessions = 4096
	cfg.Limits.MaxConcurrentLLMCalls = 4096
	cfg.Coordination.MaxBroadcastsPerSession = 1 << 30
	res, _ := cfg.Resolve(func(string) string { return "" })
	e, err := New(Options{Config: cfg, Resolved: res, DBPath: filepath.Join(dir, "db"), Model: &memModel{reply: reply}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

func runToEnd(b *testing.B, e *Engine, goal string) *Run {
	r, err := e.Start(context.Background(), goal)
	if err != nil {
		b.Fatal(err)
	}
	<-r.Done()
	if st := r.Status(); st != RunCompleted {
		_, why := r.Result()
		b.Fatalf("run %s: %s", st, why)
	}
	return r
}

// BenchmarkTurnOverhead is the runtime's cost of one turn (the model
// answers instantly in memory): storing the answer, running a cheap tool,
// storing its result and the events, building the next request.
func BenchmarkTurnOverhead(b *testing.B) {
	const turns = 20
	e := benchEngine(b, func(req llm.Request) *llm.Response {
		if memTurns(req) < turns {
			return &llm.Response{ToolCalls: []llm.ToolCall{memCall("get_shared_context", map[string]any{})}}
		}
		return &llm.Response{Content: "done"}
	})
	b.ResetTimer()
	start := rusage.CPU()
	for b.Loop() {
		runToEnd(b, e, "bench turns")
	}
	reportCPU(b, start, turns+1)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(turns+1)), "ns/turn")
}

// BenchmarkSpawn spawns ten children in parallel and waits for their
// results (each child answers at once).
func BenchmarkSpawn(b *testing.B) {
	e := benchEngine(b, func(req llm.Request) *llm.Response {
		if memRole(req) != "orchestrator" {
			return &llm.Response{Content: "child done"}
		}
		if memTurns(req) == 0 {
			tasks := make([]string, 10)
			for i := range tasks {
				tasks[i] = fmt.Sprintf("task %d", i)
			}
			return &llm.Response{ToolCalls: []llm.ToolCall{memCall("sessions_spawn", map[string]any{"task": tasks, "parallel": true, "wait": true})}}
		}
		return &llm.Response{Content: "all done"}
	})
	b.ResetTimer()
	start := rusage.CPU()
	for b.Loop() {
		runToEnd(b, e, "bench spawn")
	}
	reportCPU(b, start, 1)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*10), "ns/child")
}

// BenchmarkBroadcastFanout is one task_broadcast to 100 siblings, stored
// with its recipients and delivered into each sibling's history.
func BenchmarkBroadcastFanout(b *testing.B) {
	e := benchEngine(b, func(req llm.Request) *llm.Response {
		if memRole(req) != "orchestrator" {
			return &llm.Response{Content: "child done"}
		}
		if memTurns(req) == 0 {
			tasks := make([]string, 101)
			for i := range tasks {
				tasks[i] = fmt.Sprintf("task %d", i)
			}
			return &llm.Response{ToolCalls: []llm.ToolCall{memCall("sessions_spawn", map[string]any{"task": tasks, "parallel": true, "wait": true})}}
		}
		return &llm.Response{Content: "all done"}
	})
	r := runToEnd(b, e, "bench broadcast")
	kids := r.root.childList()
	// The sender is shown as running again (a finished session does not
	// act); its hundred siblings have completed, which is the delivery path
	// that writes into each history at once.
	kids[0].mu.Lock()
	kids[0].rec.Status = StatusRunning
	kids[0].mu.Unlock()
	h := (*host)(kids[0])
	ctx := context.Background()
	msg := "Config pattern: use ConfigContext.use(), not a direct import. File: src/context.ts"
	b.ResetTimer()
	start := rusage.CPU()
	for b.Loop() {
		res, err := h.Broadcast(ctx, nil, msg, "discovery", "siblings")
		if err != nil || res.DeliveredTo != 100 {
			b.Fatalf("broadcast: %+v %v", res, err)
		}
	}
	reportCPU(b, start, 1)
}

func reportCPU(b *testing.B, start time.Duration, per int) {
	b.ReportMetric(float64((rusage.CPU()-start).Microseconds())/float64(b.N*per), "cpu-µs/"+map[bool]string{true: "op", false: "turn"}[per == 1])
}
