package scripted

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

const scenarioYAML = `
roles:
  orchestrator:
    - tool_calls:
        - name: sessions_spawn
          args: {task: "Look around", agent: explorer, sharedContext: {n: 1}}
    - content: done
  explorer:
    - fault: {status: 503, retry_after: 1}
      content: looked around
labels:
  writer:
    - content: a draft
shadow: {content: "I'd pick a."}
default: {content: ok}
`

func writeScenario(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestScenarioReplaysByRoleAndTurn(t *testing.T) {
	p, err := LoadScenario(writeScenario(t, "s.yaml", scenarioYAML))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "system", Content: sysPrompt("orchestrator", "s-1", "")}, {Role: "user", Content: "go"}}
	rep := p.Reply(&Request{Messages: msgs})
	// Arguments keep the file's order: a shared context is shown in it.
	if len(rep.ToolCalls) != 1 || rep.ToolCalls[0].Name != "sessions_spawn" ||
		encodeArgs(rep.ToolCalls[0].Args, nil) != `{"task":"Look around","agent":"explorer","sharedContext":{"n":1}}` {
		t.Fatalf("turn 1 = %+v", rep)
	}
	msgs = append(msgs, Message{Role: "assistant"}, Message{Role: "tool", Content: "{}"})
	if rep := p.Reply(&Request{Messages: msgs}); rep.Content != "done" {
		t.Fatalf("turn 2 = %+v", rep)
	}
	msgs = append(msgs, Message{Role: "assistant", Content: "done"})
	if rep := p.Reply(&Request{Messages: msgs}); rep.Content != "ok" {
		t.Fatalf("turn 3 falls back to default: %+v", rep)
	}
	// Labels win over roles; shadow responders get the shadow reply.
	if rep := p.Reply(&Request{Messages: []Message{{Role: "system", Content: sysPrompt("executor", "s-2", "writer")}}}); rep.Content != "a draft" {
		t.Fatalf("label = %+v", rep)
	}
	shadow := []Message{{Role: "system", Content: "You are answering a question on behalf of x (y), another agent of a swarmdeck swarm."}}
	if rep := p.Reply(&Request{Messages: shadow}); rep.Content != "I'd pick a." {
		t.Fatalf("shadow = %+v", rep)
	}
}

func TestScenarioJSON(t *testing.T) {
	p, err := LoadScenario(writeScenario(t, "s.json",
		`{"roles":{"orchestrator":[{"tool_calls":[{"name":"sessions_spawn","args":{"task":"x"}}]},{"content":"done"}]},"default":{"content":"ok"}}`))
	if err != nil {
		t.Fatal(err)
	}
	rep := p.Reply(&Request{Messages: []Message{{Role: "system", Content: sysPrompt("orchestrator", "", "")}}})
	if len(rep.ToolCalls) != 1 || encodeArgs(rep.ToolCalls[0].Args, nil) != `{"task":"x"}` {
		t.Fatalf("rep = %+v", rep)
	}
}

func TestScenarioErrors(t *testing.T) {
	// want follows "scenario PATH"; every error is one line.
	for _, tc := range []struct{ name, text, want string }{
		{"typo", "roles:\n  orchestrator:\n    - contnet: x\n", ":3: "},
		{"syntax", "roles: [\n", ":1: "},
		{"empty step", "default: {}\n", ":1: default: a step needs content"},
		{"bad stall", "default: {content: x, fault: {stall: soon}}\n", ":1: default.fault.stall: "},
		{"bad status", "roles:\n  orchestrator:\n    - content: x\n      fault: {status: 200}\n", ":4: roles.orchestrator[0].fault.status: 200 is not an error status"},
		{"retry_after a mapping", "default: {content: x, fault: {status: 503, retry_after: {a: 1}}}\n", ":1: default.fault.retry_after: give whole seconds (1) or an HTTP date"},
		{"negative retry_after_ms", "default: {content: x, fault: {status: 429, retry_after_ms: -5}}\n", ":1: default.fault.retry_after_ms: -5 is negative"},
		{"negative stall", "default: {content: x, fault: {stall: -5s}}\n", ":1: default.fault.stall: -5s is negative"},
		{"times below -1", "default: {content: x, fault: {status: 503, times: -3}}\n", ":1: default.fault.times: -3: give how many times"},
		{"no name", "roles:\n  explorer:\n    - content: x\n    - tool_calls:\n        - args: {}\n", ":5: roles.explorer[1].tool_calls[0]: name is required"},
		{"args not object", "default: {tool_calls: [{name: x, args: [1]}]}\n", ":1: default.tool_calls[0].args: must be an object"},
		{"a number as text", "default:\n  content: x\n  fault:\n    status: 503\n    times: abc\n", ":5: text where a number is expected"},
		{"a list as text", "default:\n  content: [1, 2]\n", ":2: a list where text is expected"},
		{"steps not a list", "roles:\n  orchestrator: {content: x}\n", ":2: a mapping where a list is expected"},
		{"nothing", "{}\n", ": no replies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeScenario(t, "s.yaml", tc.text)
			_, err := LoadScenario(path)
			if err == nil || !strings.Contains(err.Error(), "scenario "+path+tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want %q after the path, on one line", err, tc.want)
			}
		})
	}
	if _, err := LoadScenario(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("missing file accepted")
	}
}

func scenarioServer(t *testing.T, text string, speed int) (*Server, *openai.Client, string) {
	t.Helper()
	p, err := ParseScenario([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, Config{Policy: p, StreamSpeed: speed})
}

func explorerRequest(stream bool) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: ModelID, Stream: stream, Messages: []openai.ChatCompletionMessage{
		{Role: "system", Content: sysPrompt("explorer", "s-9", "")},
		{Role: "user", Content: "Scan"},
	}}
}

func TestScenarioFaultStatusThenRecovery(t *testing.T) {
	s, c, base := scenarioServer(t, scenarioYAML, 0)
	_, err := c.CreateChatCompletion(context.Background(), explorerRequest(false))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 503 {
		t.Fatalf("first call: %v", err)
	}
	// The retry of the same turn gets through.
	resp, err := c.CreateChatCompletion(context.Background(), explorerRequest(false))
	if err != nil || resp.Choices[0].Message.Content != "looked around" {
		t.Fatalf("retry: %v %+v", err, resp)
	}
	if st := s.Stats(); st.Faults != 1 || st.Completed != 1 {
		t.Fatalf("stats = %+v", st)
	}
	// Retry-After reaches the client.
	s2, _, base2 := scenarioServer(t, scenarioYAML, 0)
	_ = base
	body := `{"messages":[{"role":"system","content":"You are the explorer agent of a swarmdeck swarm.\nYour task id: s-1"}]}`
	resp2, err := http.Post(base2+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 503 || resp2.Header.Get("Retry-After") != "1" || s2.Stats().Faults != 1 {
		t.Fatalf("status %d, Retry-After %q", resp2.StatusCode, resp2.Header.Get("Retry-After"))
	}
}

func TestScenarioFaultTruncate(t *testing.T) {
	const sc = "default: {content: \"one two three\", fault: {truncate: true}}\n"
	for _, speed := range []int{0, 1000} {
		_, _, base := scenarioServer(t, sc, speed)
		body := `{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`
		events, _ := rawSSE(t, base, body)
		joined := strings.Join(events, "\n")
		if len(events) == 0 || strings.Contains(joined, "[DONE]") || strings.Contains(joined, `"finish_reason":"`) ||
			strings.Contains(joined, `"usage":{`) {
			t.Fatalf("speed %d: truncated stream still closed properly:\n%s", speed, joined)
		}
		if !strings.Contains(joined, "three") {
			t.Fatalf("speed %d: content before the cut is missing:\n%s", speed, joined)
		}
		// The next attempt gets the whole reply.
		events, _ = rawSSE(t, base, body)
		if events[len(events)-1] != "[DONE]" {
			t.Fatalf("retry still truncated: %v", events)
		}
	}
}

func TestScenarioFaultStall(t *testing.T) {
	const stall = 300 * time.Millisecond
	_, c, _ := scenarioServer(t, "default: {content: \"one two\", fault: {stall: 300ms, times: -1}}\n", 0)
	// The stall starts on the server as soon as the first chunk is written,
	// so only the time since the request was sent is a true lower bound.
	start := time.Now()
	st, err := c.CreateChatCompletionStream(context.Background(), explorerRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < stall {
		t.Fatalf("second chunk %v after the request, want a stall of %v", d, stall)
	}
}

func TestScenarioFaultTruncateNonStreaming(t *testing.T) {
	_, c, _ := scenarioServer(t, "default: {content: \"whole answer\", fault: {truncate: true}}\n", 0)
	if _, err := c.CreateChatCompletion(context.Background(), explorerRequest(false)); err == nil {
		t.Fatal("a truncated body decoded")
	}
	resp, err := c.CreateChatCompletion(context.Background(), explorerRequest(false))
	if err != nil || resp.Choices[0].Message.Content != "whole answer" {
		t.Fatalf("retry: %v %+v", err, resp)
	}
}

func TestScenarioSubOrchestratorKey(t *testing.T) {
	p, err := ParseScenario([]byte("roles:\n  orchestrator: [{content: root}]\n  sub-orchestrator: [{content: sub}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	sub := sysPrompt("orchestrator", "s-2", "", "You are a sub-orchestrator working on a delegated task.")
	if rep := p.Reply(&Request{Messages: []Message{{Role: "system", Content: sub}}}); rep.Content != "sub" {
		t.Fatalf("delegated: %q", rep.Content)
	}
	if rep := p.Reply(&Request{Messages: []Message{{Role: "system", Content: sysPrompt("orchestrator", "s-1", "")}}}); rep.Content != "root" {
		t.Fatalf("root: %q", rep.Content)
	}
}

func TestScenarioRolesMustExist(t *testing.T) {
	p, err := ParseScenario([]byte("roles:\n  orchestrator: [{content: root}]\n  sub-orchestrator: [{content: sub}]\n  reseacher: [{content: x}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	known := []string{"orchestrator", "researcher"}
	err = CheckScenarioRoles(p, "s.yaml", known)
	if err == nil || !strings.Contains(err.Error(), `scenario s.yaml:4: roles.reseacher: no agent has the role "reseacher"; script one of orchestrator, researcher`) {
		t.Errorf("err = %v", err)
	}
	if err := CheckScenarioRoles(p, "s.yaml", append(known, "reseacher")); err != nil {
		t.Errorf("known roles refused: %v", err)
	}
	if err := CheckScenarioRoles(Bench(), "s.yaml", known); err != nil {
		t.Errorf("a policy that is not a scenario: %v", err)
	}
}
