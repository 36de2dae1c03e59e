package runtime

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// Tool results and errors go to the model and the transcript as plain
// JSON: no \u003e for ">" (a plan's cycle is "a -> b -> a"), and still
// JSON that decodes to the same value.
func TestToolResultsArePlainJSON(t *testing.T) {
	msg := `dependency cycle: draft -> review -> draft; <tags> & "quotes"` + "\n\u2028"
	got := errorJSON(msg)
	want := `{"error":"dependency cycle: draft -> review -> draft; <tags> & \"quotes\"\n\u2028"}`
	if got != want {
		t.Errorf("errorJSON:\n got %s\nwant %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(got), &back); err != nil || back["error"] != msg {
		t.Errorf("does not decode back: %v %q", err, back["error"])
	}
}

// The results of one answer's calls go back to the model in the order of
// the calls, whichever finished first: chat templates that drop
// tool_call_id pair results with calls by position.
func TestToolResultsSentInCallOrder(t *testing.T) {
	var order atomic.Value
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if firstLineRole(req) != "orchestrator" {
			time.Sleep(150 * time.Millisecond) // the child's answer is slow
			return limSay("child done")
		}
		switch turnsOf(req) {
		case 0:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "slow work", "label": "slow"}})
		case 1:
			// task_wait finishes long after get_shared_context.
			return limDo(scripted.Call{Name: "task_wait", Args: limArgs{}}, scripted.Call{Name: "get_shared_context", Args: limArgs{}})
		}
		var calls, results []string
		for i, m := range req.Messages {
			if m.Role == "assistant" && len(m.ToolCalls) == 2 {
				for _, c := range m.ToolCalls {
					calls = append(calls, c.ID)
				}
				for _, r := range req.Messages[i+1:] {
					if r.Role != "tool" {
						break
					}
					results = append(results, r.ToolCallID)
				}
			}
		}
		order.Store([2][]string{calls, results})
		return limSay("done")
	})
	e := testEngine(t, nil, policy, nil)
	if _, code := headless(t, e, "order", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	got, _ := order.Load().([2][]string)
	if len(got[0]) != 2 || !slices.Equal(got[0], got[1]) {
		t.Fatalf("calls %v answered in the order %v", got[0], got[1])
	}
}

// A final answer that is empty, or cut off at the model's output limit,
// is not taken as the session's result: the model is told what was wrong
// and asked again, once. An answer to that cut off is the result, marked as
// incomplete.
func TestUnfitFinalAnswerAskedAgainOnce(t *testing.T) {
	type answer struct{ content, finish string }
	for _, tc := range []struct {
		name    string
		answers []answer
		note    string
		result  string
	}{
		{"empty", []answer{{"", "stop"}, {"The launch plan is ready.", "stop"}}, noteEmptyAnswer, "The launch plan is ready."},
		{"cut off twice", []answer{{"The plan has three pha", "length"}, {"The plan has three phases: a, b and", "length"}},
			noteCutOff, "The plan has three phases: a, b and\n\n[cut off: this answer reached the model's output limit and is incomplete]"},
		// The mark does not claim a second cut: the first answer was empty.
		{"empty, then cut off", []answer{{"", "stop"}, {"The plan has three pha", "length"}},
			noteEmptyAnswer, "The plan has three pha\n\n[cut off: this answer reached the model's output limit and is incomplete]"},
		{"cut off with nothing, twice", []answer{{"", "length"}, {" ", "length"}},
			noteEmptyAnswer, "[cut off: this answer reached the model's output limit and is incomplete]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var lastUser []string
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					Messages []struct{ Role, Content string }
				}
				_ = json.NewDecoder(r.Body).Decode(&req)
				mu.Lock()
				n := len(lastUser)
				lastUser = append(lastUser, req.Messages[len(req.Messages)-1].Content)
				mu.Unlock()
				a := answer{"unexpected call", "stop"}
				if n < len(tc.answers) {
					a = tc.answers[n]
				}
				content, _ := json.Marshal(a.content)
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%s}}]}\n\n", content)
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":%q}]}\n\ndata: [DONE]\n\n", a.finish)
			}))
			defer hs.Close()
			e := testEngine(t, hs, nil, nil)
			events, code := headless(t, e, "plan", nil)
			if code != ExitOK {
				t.Fatalf("exit %d", code)
			}
			if run := events[len(events)-1].Run; run == nil || run.Result != tc.result {
				t.Errorf("run.finished = %+v, want the result %q", run, tc.result)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(lastUser) != 2 || lastUser[1] != tc.note {
				t.Errorf("the model was sent %q last, want 2 calls, the second ending with the note %q", lastUser, tc.note)
			}
		})
	}
}

// A model that answers with nothing again when asked for an answer fails
// its session, saying so, instead of completing with an empty result.
func TestEmptyAnswerTwiceFails(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer hs.Close()
	e := testEngine(t, hs, nil, nil)
	events, code := headless(t, e, "plan", nil)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d", code, ExitFailed)
	}
	if run := events[len(events)-1].Run; run == nil || run.Status != "failed" || !strings.Contains(run.Error, "the model answered with nothing, twice") {
		t.Errorf("run.finished = %+v", run)
	}
}

// Calls after a spawn in the same answer see the child it created: a
// model that spawns a child and, in the same answer, waits for its output,
// messages it or broadcasts to its children is not told the child does not
// exist.
func TestCallsAfterASpawnSeeTheChild(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if firstLineRole(req) != "orchestrator" {
			return limSay("child done")
		}
		if turnsOf(req) == 0 {
			return limDo(
				scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "look around", "label": "kid"}},
				scripted.Call{Name: "task_send_message", Args: limArgs{"task_id": "kid", "message": "start with docs/", "noReply": true}},
				scripted.Call{Name: "task_broadcast", Args: limArgs{"message": "the launch is in May", "category": "context", "target": "children"}},
				scripted.Call{Name: "task_output", Args: limArgs{"task_id": "kid", "wait": true}},
			)
		}
		return limSay("done")
	})
	e := testEngine(t, nil, policy, nil)
	if _, code := headless(t, e, "spawn and use", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	root := &exportLatest(t, e).Sessions[0]
	for name, want := range map[string]string{
		"task_send_message": `"status":"delivered"`,
		"task_broadcast":    `"delivered_to":1`,
		"task_output":       `"output":"child done"`,
	} {
		if r := toolResults(root, name); len(r) != 1 || !strings.Contains(r[0], want) {
			t.Errorf("%s answered %v, want %s", name, r, want)
		}
	}
}

// Workspace calls of an answer that writes run in their order: a read
// after a write of the same file sees what was written, a read before it
// what was there, and a second edit the first one's result. Run
// concurrently, they raced; repeated so that a race would show.
func TestWorkspaceCallsOfAnAnswerRunInOrder(t *testing.T) {
	for i := range 5 {
		policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
			if turnsOf(req) == 0 {
				return limDo(
					scripted.Call{Name: "read_file", Args: limArgs{"path": "README.md"}},
					scripted.Call{Name: "write_file", Args: limArgs{"path": "new.txt", "content": "one"}},
					scripted.Call{Name: "task_broadcast", Args: limArgs{"message": "wrote new.txt", "category": "context"}},
					scripted.Call{Name: "edit_file", Args: limArgs{"path": "new.txt", "old_string": "one", "new_string": "one two"}},
					scripted.Call{Name: "read_file", Args: limArgs{"path": "new.txt"}},
				)
			}
			return limSay("done")
		})
		e := testEngine(t, nil, policy, func(c *config.Config) {
			for i := range c.Agents {
				if c.Agents[i].Role == "orchestrator" {
					c.Agents[i].CanWrite = true
				}
			}
		})
		if _, code := headless(t, e, "write and read", nil); code != ExitOK {
			t.Fatalf("run %d: exit %d", i, code)
		}
		reads := toolResults(rootOf(exportLatest(t, e)), "read_file")
		if len(reads) != 2 || !strings.Contains(reads[0], "Demo project") || !strings.Contains(reads[1], "one two") {
			t.Fatalf("run %d: read_file answered %q, want README.md and then new.txt as edited", i, reads)
		}
	}
}

// The write tools leave swarmdeck's own files alone when they lie in the
// workspace: an agent rewriting the configuration would raise its own
// limits at the next reload.
func TestWriteToolsLeaveSwarmdecksFiles(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if turnsOf(req) == 0 {
			return limDo(
				scripted.Call{Name: "write_file", Args: limArgs{"path": "config.yaml", "content": "limits:\n  max_turns_per_session: 1000\n"}},
				scripted.Call{Name: "edit_file", Args: limArgs{"path": "swarm.log", "old_string": "x", "new_string": "y"}},
				scripted.Call{Name: "write_file", Args: limArgs{"path": "notes.md", "content": "mine"}},
			)
		}
		return limSay("done")
	})
	var cfgPath string
	e := testEngine(t, nil, policy, func(c *config.Config) {
		cfgPath = filepath.Join(c.Workspace, "config.yaml")
		os.WriteFile(cfgPath, []byte("limits:\n  max_turns_per_session: 3\n"), 0o644)
		c.Path = cfgPath
		c.LogFile = filepath.Join(c.Workspace, "swarm.log")
		letOrchestratorWrite(c)
	})
	if _, code := headless(t, e, "write", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	root := rootOf(exportLatest(t, e))
	writes := toolResults(root, "write_file")
	if len(writes) != 2 || !strings.Contains(writes[0], "config.yaml is swarmdeck's own configuration file") || !strings.Contains(writes[1], `"bytes":4`) {
		t.Errorf("write_file answered %q", writes)
	}
	if edits := toolResults(root, "edit_file"); len(edits) != 1 || !strings.Contains(edits[0], "swarm.log is swarmdeck's own log") {
		t.Errorf("edit_file answered %q", edits)
	}
	if b, _ := os.ReadFile(cfgPath); !strings.Contains(string(b), "max_turns_per_session: 3") {
		t.Errorf("the configuration changed: %s", b)
	}
}

// The files a next start would read as its configuration are swarmdeck's
// own too, before they exist: ./config.yaml, in a workspace that is the
// current directory, and the one in the user's config directory.
func TestWriteToolsCreateNoConfiguration(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if turnsOf(req) == 0 {
			return limDo(
				scripted.Call{Name: "write_file", Args: limArgs{"path": "config.yaml", "content": "providers: {}\n"}},
				scripted.Call{Name: "write_file", Args: limArgs{"path": "xdg/swarmdeck/config.yaml", "content": "providers: {}\n"}},
				scripted.Call{Name: "write_file", Args: limArgs{"path": "xdg/swarmdeck/notes.md", "content": "mine"}},
			)
		}
		return limSay("done")
	})
	var ws string
	e := testEngine(t, nil, policy, func(c *config.Config) {
		ws = c.Workspace
		t.Chdir(ws)
		t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, "xdg"))
		letOrchestratorWrite(c)
	})
	if _, code := headless(t, e, "write", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	writes := toolResults(rootOf(exportLatest(t, e)), "write_file")
	if len(writes) != 3 || !strings.Contains(writes[0], "config.yaml is swarmdeck's own configuration file") ||
		!strings.Contains(writes[1], "xdg/swarmdeck/config.yaml is swarmdeck's own configuration file") || !strings.Contains(writes[2], `"bytes":4`) {
		t.Errorf("write_file answered %q", writes)
	}
	for _, p := range []string{"config.yaml", "xdg/swarmdeck/config.yaml"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("an agent created %s", p)
		}
	}
}

// Arguments over the tools' limit are refused, and are not sent back with
// every later request of the session: the history carries {} in their
// place (the store keeps what the model wrote).
func TestOversizedArgumentsAreNotSentAgain(t *testing.T) {
	huge := strings.Repeat("x", 1<<20+10)
	var sentBack atomic.Value
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if turnsOf(req) == 0 {
			return limDo(scripted.Call{Name: "get_shared_context", Args: limArgs{"padding": huge}})
		}
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				sentBack.Store(c.Arguments)
			}
		}
		return limSay("done")
	})
	e := testEngine(t, nil, policy, nil)
	if _, code := headless(t, e, "big", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if got, _ := sentBack.Load().(string); got != "{}" {
		t.Errorf("the refused call's arguments went back as %d bytes, want {}", len(got))
	}
	x := exportLatest(t, e)
	root := rootOf(x)
	if res := toolResults(root, "get_shared_context"); len(res) != 1 || !strings.Contains(res[0], "the limit is 1048576") {
		t.Errorf("tool result %.200q", res)
	}
	stored := false
	for _, m := range root.Messages {
		for _, c := range m.ToolCalls {
			stored = stored || len(c.Arguments) > 1<<20
		}
	}
	if !stored {
		t.Error("the store lost what the model wrote")
	}
}

// A call whose arguments were cut off with the answer, at the model's
// output limit, is told so, not only that its JSON is incomplete.
func TestCutOffArgumentsSaySo(t *testing.T) {
	var result atomic.Value
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string }
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "text/event-stream")
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			result.Store(last.Content)
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\","+
			"\"function\":{\"name\":\"task_broadcast\",\"arguments\":\"{\\\"message\\\": \\\"a long note th\"}}]}}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer hs.Close()
	e := testEngine(t, hs, nil, nil)
	if _, code := headless(t, e, "cut", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	got, _ := result.Load().(string)
	if !strings.Contains(got, "the JSON is complete") || !strings.Contains(got, "cut off at the model's output limit") {
		t.Errorf("the model was told %s", got)
	}
}

// A failed call's error names its tool first, so that a model (or a
// person reading the transcript) that made several calls at once knows
// which one failed without matching tool_call_id; the words after the
// name are the error's own.
func TestToolErrorsNameTheirTool(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if turnsOf(req) == 0 {
			return limDo(
				scripted.Call{Name: "spawn_agent", Args: limArgs{"task": "x"}},
				scripted.Call{Name: "sessions_spawn", Args: json.RawMessage(`{"task":`)},
				scripted.Call{Name: "task_output", Args: limArgs{"task_id": "t-nobody"}},
				scripted.Call{Name: "delegate_task", Args: limArgs{"description": "work elsewhere"}},
			)
		}
		return limSay("done")
	})
	e := testEngine(t, nil, policy, func(c *config.Config) { c.Limits.MaxSpawnDepth = 0 })
	events, code := headless(t, e, "fail four ways", nil)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	root := rootOf(exportLatest(t, e))
	for name, want := range map[string]string{
		"spawn_agent":    `there is no tool named "spawn_agent"`,
		"sessions_spawn": "arguments are not valid JSON",
		"task_output":    `"t-nobody"`,
		"delegate_task":  "max_spawn_depth is 0",
	} {
		res := toolResults(root, name)
		if len(res) != 1 {
			t.Errorf("%s: %d results, want 1", name, len(res))
			continue
		}
		msg := toolError(res[0])
		rest, named := strings.CutPrefix(msg, name+": ")
		if !named || !strings.Contains(rest, want) || strings.HasPrefix(rest, name+":") {
			t.Errorf("%s answered %s, want {\"error\":\"%s: ...%s...\"}", name, res[0], name, want)
		}
	}
	failed := 0
	for _, ev := range events {
		if ev.Type == event.ToolFinished && ev.Tool.IsError {
			failed++
			if !strings.HasPrefix(ev.Tool.Result, `{"error":"`+ev.Tool.Name+": ") {
				t.Errorf("tool.finished of %s: %s", ev.Tool.Name, ev.Tool.Result)
			}
		}
	}
	if failed != 4 {
		t.Errorf("%d tool.finished events with an error, want 4", failed)
	}
}

// An error that already begins with its tool's name is not named twice,
// and a call without a name has nothing to be named by.
func TestToolErrorPrefix(t *testing.T) {
	for _, tc := range []struct{ name, msg, want string }{
		{"read_file", "notes.md does not exist", `{"error":"read_file: notes.md does not exist"}`},
		{"read_file", "read_file: notes.md does not exist", `{"error":"read_file: notes.md does not exist"}`},
		{"read_file", "read_files are many", `{"error":"read_file: read_files are many"}`},
		{"", `there is no tool named ""`, `{"error":"there is no tool named \"\""}`},
	} {
		if got := toolErrorJSON(tc.name, tc.msg); got != tc.want {
			t.Errorf("toolErrorJSON(%q, %q) = %s, want %s", tc.name, tc.msg, got, tc.want)
		}
	}
}

// read_file of a file longer than the runtime keeps of a result returns
// the whole lines that fit and where to go on, not a content cut in the
// middle by the runtime with counts that no longer match it.
func TestReadFileFitsTheToolOutputLimit(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		if c.turns == 0 {
			return do(call("read_file", obj{"path": "big.txt"}))
		}
		return say("done")
	})
	e := testEngine(t, nil, p, nil)
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&b, "line %04d of a long file\n", i)
	}
	if err := os.WriteFile(filepath.Join(e.Config().Workspace, "big.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, code := headless(t, e, "read it", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	res := toolResults(&exportLatest(t, e).Sessions[0], "read_file")
	if len(res) != 1 {
		t.Fatalf("results %q", res)
	}
	var fc agents.FileContent
	decode(t, res[0], &fc)
	if strings.Contains(res[0], "[cut]") || !fc.Truncated || fc.NextOffset != fc.Lines+1 || strings.Count(fc.Content, "\n") != fc.Lines ||
		len([]rune(res[0])) > e.Config().Limits.MaxToolOutput {
		t.Errorf("read_file gave %d characters: lines %d, next %d, truncated %v, cut by the runtime %v",
			len([]rune(res[0])), fc.Lines, fc.NextOffset, fc.Truncated, strings.Contains(res[0], "[cut]"))
	}
}

// A prompts_dir moved into the workspace by a reload is swarmdeck's own
// from then on, as one set at the start is: an agent that wrote there
// would write the system prompts of the sessions after it.
func TestWriteToolsLeaveAReloadedPromptsDir(t *testing.T) {
	reloaded := newGate()
	policy := writeOnceOpen(reloaded, "pp/reviewer.md", "{{template \"_header\" .}}\nMINE\n")
	e := testEngine(t, nil, policy, func(c *config.Config) {
		os.Mkdir(filepath.Join(c.Workspace, "pp"), 0o755)
		letOrchestratorWrite(c)
	})
	go reloadOnceStarted(t, e, 1, reloaded, func(c *config.Config) {
		c.PromptsDir = filepath.Join(c.Workspace, "pp")
	})
	if _, code := headless(t, e, "write", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	writes := toolResults(rootOf(exportLatest(t, e)), "write_file")
	if len(writes) != 1 || !strings.Contains(writes[0], "pp/reviewer.md is swarmdeck's own prompt templates") {
		t.Errorf("write_file answered %q", writes)
	}
	if _, err := os.Stat(filepath.Join(e.Config().Workspace, "pp", "reviewer.md")); err == nil {
		t.Error("an agent wrote a prompt template")
	}
}

// A reload that is refused protects nothing: a prompts_dir that could not
// be read (a mistake in the file, taken back) leaves that directory the
// agents' to write.
func TestARefusedReloadProtectsNothing(t *testing.T) {
	tried := newGate()
	e := testEngine(t, nil, writeOnceOpen(tried, "notes/todo.md", "mine"), letOrchestratorWrite)
	go onceStarted(e, 1, tried, func() {
		next := *e.Config()
		next.PromptsDir = filepath.Join(next.Workspace, "notes") // not there: refused
		if err := e.Reload(&next); err == nil {
			t.Error("a reload to a missing prompts_dir went through")
		}
	})
	if _, code := headless(t, e, "write", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	writes := toolResults(rootOf(exportLatest(t, e)), "write_file")
	if len(writes) != 1 || !strings.Contains(writes[0], `"bytes":4`) {
		t.Errorf("write_file answered %q", writes)
	}
}

// writeOnceOpen is a policy whose sessions write content to path on their
// first turn, once open is open, and then end.
func writeOnceOpen(open *gate, path, content string) scripted.Policy {
	return scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if turnsOf(req) == 0 {
			open.wait()
			return limDo(scripted.Call{Name: "write_file", Args: limArgs{"path": path, "content": content}})
		}
		return limSay("done")
	})
}

// letOrchestratorWrite gives the orchestrator the write tools, for a test
// of what they may write.
func letOrchestratorWrite(c *config.Config) {
	for i := range c.Agents {
		if c.Agents[i].Role == "orchestrator" {
			c.Agents[i].CanWrite = true
		}
	}
}
