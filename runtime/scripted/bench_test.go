package scripted

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestBenchShape(t *testing.T) {
	for _, tc := range []struct{ agents, fanout, sessions, depth int }{
		{10, 10, 10, 1},
		{1000, 10, 1000, 3},
		{7, 3, 7, 2},
		{1, 10, 1, 0},
		{2, 10, 2, 1},
		{12, 10, 12, 2}, // 11 below the root: one child of 2, nine leaves
		{5, 1, 5, 4},    // fanout 1 is a chain
	} {
		s, d := BenchShape(tc.agents, tc.fanout)
		if s != tc.sessions || d != tc.depth {
			t.Errorf("BenchShape(%d, %d) = %d, %d; want %d, %d", tc.agents, tc.fanout, s, d, tc.sessions, tc.depth)
		}
	}
}

func TestBenchIdeal(t *testing.T) {
	const l = 100 * time.Millisecond
	for _, tc := range []struct {
		agents, fanout, turns int
		want                  time.Duration
	}{
		{10, 10, 2, 4 * l},    // root 2 calls + leaf 2
		{1000, 10, 2, 8 * l},  // three internal levels + leaf
		{7, 3, 1, 5 * l},      // two internal levels + leaf 1
		{1, 10, 3, 3 * l},     // the root is a leaf
		{1000, 10, 5, 11 * l}, // leaf turns add up
		// Mixed children run alongside each other: the slowest counts.
		{12, 10, 2, 6 * l},  // root 2 + the node of 2 (2 + leaf 2), beside leaves of 2
		{20, 10, 1, 5 * l},  // root 2 + a node of 2 (2 + leaf 1), beside a leaf of 1
		{21, 10, 1, 5 * l},  // 20 below: ten nodes of 2, no leaves
		{202, 10, 2, 8 * l}, // root 2 + a child of 20 or 21 (2 + a node of 2 (2 + leaf 2))
	} {
		if got := BenchIdeal(tc.agents, tc.fanout, tc.turns, l); got != tc.want {
			t.Errorf("BenchIdeal(%d, %d, %d) = %v, want %v", tc.agents, tc.fanout, tc.turns, got, tc.want)
		}
	}
}

func TestBenchGoalRoundTrip(t *testing.T) {
	g := BenchGoal(1000, 10, 2, 1)
	if g != "bench: size=1000 fanout=10 turns=2 broadcasts=1" {
		t.Fatal(g)
	}
	if s, ok := parseBench("Your task:\n" + g + "\nthanks"); !ok || s != (benchSpec{1000, 10, 2, 1}) {
		t.Fatalf("%+v %v", s, ok)
	}
	if _, ok := parseBench("bench: size=x"); ok {
		t.Fatal("bad size accepted")
	}
}

// benchRun records what a simulated bench run did.
type benchRun struct {
	sessions   int
	calls      int
	depth      int
	leafTurns  map[int]int // turns taken -> leaves
	broadcasts map[int]int // broadcasts on the first turn -> leaves
	nodeTurns  map[int]int
}

// simulateBench runs one session of the bench policy to its end, running
// the children of its spawns recursively as the runtime would with wait:true.
// It returns the session's critical path in LLM calls: the runtime runs a
// turn's spawns one after the other, each waiting for its children.
func simulateBench(t *testing.T, run *benchRun, agent, task string, depth int) (path int) {
	t.Helper()
	run.sessions++
	run.depth = max(run.depth, depth)
	msgs := []Message{
		{Role: "system", Content: "You are the " + agent + " agent of a swarmdeck swarm.\nYour task id: s-x"},
		{Role: "user", Content: task},
	}
	spec, _ := parseBench(task)
	broadcasts := 0
	for turn := 1; ; turn++ {
		if turn > 20 {
			t.Fatalf("%s never finished", task)
		}
		rep := Bench().Reply(&Request{Messages: msgs})
		run.calls++
		path++
		if len(rep.ToolCalls) == 0 {
			if !strings.HasPrefix(rep.Content, Prefix) {
				t.Fatalf("answer %q", rep.Content)
			}
			if spec.size == 1 {
				run.leafTurns[turn]++
				run.broadcasts[broadcasts]++
			} else {
				run.nodeTurns[turn]++
			}
			return path
		}
		am := Message{Role: "assistant"}
		var results []Message
		// Spawns that do not wait run their children alongside each
		// other; the task_wait after them waits for the slowest.
		pending, pendingLongest := []string(nil), 0
		for i, c := range rep.ToolCalls {
			id := fmt.Sprintf("call_%d_%d", turn, i)
			argText := encodeArgs(c.Args, nil)
			am.ToolCalls = append(am.ToolCalls, ToolCall{ID: id, Name: c.Name, Arguments: argText})
			res := `{"status":"ok"}`
			switch c.Name {
			case "task_broadcast":
				if turn == 1 {
					broadcasts++
				}
			case "sessions_spawn":
				if turn != 1 {
					t.Fatalf("spawn on turn %d", turn)
				}
				var a struct {
					Task     []string
					Agent    string
					Parallel bool
					Wait     bool
				}
				if err := json.Unmarshal([]byte(argText), &a); err != nil {
					t.Fatal(err)
				}
				if !a.Parallel {
					t.Fatalf("spawn must be parallel: %s", argText)
				}
				var sessions []string
				longest := 0
				for _, child := range a.Task {
					cs, ok := parseBench(child)
					if !ok || (cs.size > 1) != (a.Agent == "planner") {
						t.Fatalf("child %q spawned as %s", child, a.Agent)
					}
					longest = max(longest, simulateBench(t, run, a.Agent, child, depth+1))
					sessions = append(sessions, `{"task_id":"s-1","status":"completed","output":"done"}`)
				}
				if !a.Wait {
					pending = append(pending, sessions...)
					pendingLongest = max(pendingLongest, longest)
					res = `{"status":"running","sessions":[]}`
					break
				}
				path += longest
				res = `{"status":"completed","sessions":[` + strings.Join(sessions, ",") + `]}`
			case "task_wait":
				if len(pending) == 0 {
					t.Fatalf("task_wait with nothing spawned to wait for")
				}
				path += pendingLongest
				res = `{"results":[` + strings.Join(pending, ",") + `],"timed_out":[]}`
				pending = nil
			}
			results = append(results, Message{Role: "tool", ToolCallID: id, Content: res})
		}
		if len(pending) > 0 {
			t.Fatalf("children spawned without waiting and no task_wait after them")
		}
		msgs = append(append(msgs, am), results...)
	}
}

func TestBenchPolicyBuildsTheTree(t *testing.T) {
	for _, tc := range []struct{ agents, fanout, turns, broadcasts int }{
		{10, 10, 2, 1},
		{1000, 10, 2, 1},
		{7, 3, 3, 0},
		{12, 10, 1, 2},
		{50, 4, 4, 3},
		{202, 10, 2, 1},
	} {
		t.Run(fmt.Sprint(tc), func(t *testing.T) {
			run := &benchRun{leafTurns: map[int]int{}, broadcasts: map[int]int{}, nodeTurns: map[int]int{}}
			path := simulateBench(t, run, "orchestrator", BenchGoal(tc.agents, tc.fanout, tc.turns, tc.broadcasts), 0)
			sessions, depth := BenchShape(tc.agents, tc.fanout)
			if run.sessions != sessions || run.sessions != tc.agents || run.depth != depth {
				t.Fatalf("ran %d sessions at depth %d; BenchShape says %d, %d", run.sessions, run.depth, sessions, depth)
			}
			if want := BenchCalls(tc.agents, tc.fanout, tc.turns); run.calls != want {
				t.Fatalf("made %d LLM calls; BenchCalls says %d", run.calls, want)
			}
			if ideal := BenchIdeal(tc.agents, tc.fanout, tc.turns, time.Second); time.Duration(path)*time.Second != ideal {
				t.Fatalf("critical path of %d calls; BenchIdeal says %v at 1s a call", path, ideal)
			}
			leaves := 0
			for turns, n := range run.leafTurns {
				if turns != tc.turns {
					t.Fatalf("%d leaves took %d turns, want %d", n, turns, tc.turns)
				}
				leaves += n
			}
			wantBroadcasts := tc.broadcasts
			if tc.turns == 1 {
				wantBroadcasts = 0
			}
			if run.broadcasts[wantBroadcasts] != leaves {
				t.Fatalf("broadcasts per leaf: %v, want %d each", run.broadcasts, wantBroadcasts)
			}
			for turns := range run.nodeTurns {
				if turns != 2 {
					t.Fatalf("an internal node took %d turns", turns)
				}
			}
		})
	}
}

func TestBenchLeafTurns(t *testing.T) {
	task := BenchGoal(1, 10, 3, 2)
	msgs := []Message{{Role: "system", Content: "You are the researcher agent of a swarmdeck swarm."}, {Role: "user", Content: task}}
	rep := Bench().Reply(&Request{Messages: msgs})
	wantCalls(t, rep, "task_broadcast", "task_broadcast")
	if a := args(t, rep, "task_broadcast"); a["target"] != "siblings" || a["category"] != "discovery" {
		t.Fatal(a)
	}
	msgs = append(msgs, Message{Role: "assistant"}, Message{Role: "tool", Content: "{}"})
	wantCalls(t, Bench().Reply(&Request{Messages: msgs}), "get_shared_context")
	msgs = append(msgs, Message{Role: "assistant"}, Message{Role: "tool", Content: "{}"})
	wantFinal(t, Bench().Reply(&Request{Messages: msgs}))

	// No broadcasts: one cheap call instead.
	one := []Message{{Role: "user", Content: BenchGoal(1, 10, 2, 0)}}
	wantCalls(t, Bench().Reply(&Request{Messages: one}), "get_shared_context")
}

func TestBenchNodeReportsSpawnFailure(t *testing.T) {
	msgs := []Message{{Role: "user", Content: BenchGoal(5, 2, 1, 0)}, {Role: "assistant"}, {Role: "tool", Content: `{"error":"max sessions per run reached"}`}}
	rep := Bench().Reply(&Request{Messages: msgs})
	if len(rep.ToolCalls) != 0 || !strings.Contains(rep.Content, "max sessions per run reached") {
		t.Fatalf("rep = %+v", rep)
	}
}

// A node's answer counts its children that completed, not the spawn's own
// status beside theirs.
func TestBenchNodeCountsItsChildren(t *testing.T) {
	res := `{"status":"completed","sessions":[{"task_id":"s-1","status":"completed"},{"task_id":"s-2","status":"failed"},{"task_id":"s-3","status":"completed"}]}`
	msgs := []Message{{Role: "user", Content: BenchGoal(5, 3, 1, 0)}, {Role: "assistant"}, {Role: "tool", Content: res}}
	rep := Bench().Reply(&Request{Messages: msgs})
	if !strings.HasSuffix(rep.Content, ": 2 children completed") {
		t.Errorf("the node said %q", rep.Content)
	}
}

// BenchChildren divides the sessions below a node among at most fanout
// children, as evenly as possible, and agrees with BenchShape and
// BenchCalls when the tree is walked with it.
func TestBenchChildren(t *testing.T) {
	for _, tc := range []struct{ size, fanout, turns int }{
		{1, 10, 2}, {2, 10, 2}, {10, 10, 2}, {12, 10, 1}, {202, 10, 2}, {1000, 10, 2}, {5, 1, 3}, {7, 3, 1},
	} {
		var sessions, calls int
		var walk func(n int)
		walk = func(n int) {
			sessions++
			kids := BenchChildren(n, tc.fanout)
			if len(kids) == 0 {
				calls += tc.turns
				return
			}
			calls += 2
			sum := 0
			for i, k := range kids {
				if k < 1 || (i > 0 && k > kids[i-1]) || kids[0]-k > 1 {
					t.Fatalf("BenchChildren(%d, %d) = %v: not an even split", n, tc.fanout, kids)
				}
				sum += k
				walk(k)
			}
			if sum != n-1 || len(kids) > tc.fanout {
				t.Fatalf("BenchChildren(%d, %d) = %v: want at most %d sizes summing to %d", n, tc.fanout, kids, tc.fanout, n-1)
			}
		}
		walk(tc.size)
		if want, _ := BenchShape(tc.size, tc.fanout); sessions != want {
			t.Errorf("size %d fanout %d: walked %d sessions, BenchShape says %d", tc.size, tc.fanout, sessions, want)
		}
		if want := BenchCalls(tc.size, tc.fanout, tc.turns); calls != want {
			t.Errorf("size %d fanout %d: walked %d calls, BenchCalls says %d", tc.size, tc.fanout, calls, want)
		}
	}
}
