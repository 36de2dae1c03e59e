package scripted

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// Bench returns the policy `swarmdeck bench` runs: every session's task is
// a BenchGoal line, and a session of size n builds a subtree of n sessions.
// An internal node spawns its children in one turn (parallel, wait:true)
// and answers in the next; a leaf takes exactly `turns` turns, broadcasting
// on the first. It writes as little text as possible: what is measured is
// the runtime, not the model.
func Bench() Policy { return benchPolicy{} }

type benchPolicy struct{}

// benchSpec is one parsed BenchGoal line.
type benchSpec struct {
	size, fanout, turns, broadcasts int
}

// BenchGoal is the goal of a bench run of the given shape, and the task of
// each of its sessions: `bench: size=1000 fanout=10 turns=2 broadcasts=1`.
func BenchGoal(agents, fanout, turns, broadcasts int) string {
	return string(appendBenchGoal(nil, benchSpec{agents, fanout, turns, broadcasts}))
}

func appendBenchGoal(b []byte, s benchSpec) []byte {
	b = append(b, "bench: size="...)
	b = strconv.AppendInt(b, int64(s.size), 10)
	b = append(b, " fanout="...)
	b = strconv.AppendInt(b, int64(s.fanout), 10)
	b = append(b, " turns="...)
	b = strconv.AppendInt(b, int64(s.turns), 10)
	b = append(b, " broadcasts="...)
	return strconv.AppendInt(b, int64(s.broadcasts), 10)
}

// IsBenchGoal reports whether goal is one BenchGoal made: the goal of a
// `swarmdeck bench` run.
func IsBenchGoal(goal string) bool {
	_, ok := parseBench(goal)
	return ok && strings.HasPrefix(goal, "bench: size=")
}

// parseBench finds a BenchGoal line in a text.
func parseBench(text string) (benchSpec, bool) {
	i := strings.Index(text, "bench: ")
	if i < 0 {
		return benchSpec{}, false
	}
	line := text[i+len("bench: "):]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	s := benchSpec{size: -1, fanout: 1, turns: 1}
	for line != "" {
		var field string
		field, line, _ = strings.Cut(line, " ")
		k, v, ok := strings.Cut(field, "=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return benchSpec{}, false
		}
		switch k {
		case "size":
			s.size = n
		case "fanout":
			s.fanout = n
		case "turns":
			s.turns = n
		case "broadcasts":
			s.broadcasts = n
		}
	}
	if s.size < 1 {
		return benchSpec{}, false
	}
	s.fanout = max(s.fanout, 1)
	s.turns = max(s.turns, 1)
	s.broadcasts = max(s.broadcasts, 0)
	return s, true
}

// split divides the size-1 sessions below a node among its children as
// evenly as possible: the first r children get one more.
func split(size, fanout int) (k, q, r int) {
	below := size - 1
	k = min(fanout, below)
	if k <= 0 {
		return 0, 0, 0
	}
	return k, below / k, below % k
}

// BenchChildren returns the sizes of the subtrees a node of the given size
// spawns: none for a leaf.
func BenchChildren(size, fanout int) []int {
	k, q, r := split(size, max(fanout, 1))
	out := make([]int, k)
	for i := range out {
		out[i] = q
		if i < r {
			out[i]++
		}
	}
	return out
}

// BenchShape returns how many sessions a bench run of the given size
// creates and how deep its tree is (the root has depth 0).
func BenchShape(agents, fanout int) (sessions, depth int) {
	memo := map[int]int{}
	var count func(n int) int
	count = func(n int) int {
		if n <= 1 {
			return 1
		}
		if c, ok := memo[n]; ok {
			return c
		}
		k, q, r := split(n, max(fanout, 1))
		c := 1 + (k-r)*count(q)
		if r > 0 {
			c += r * count(q+1)
		}
		memo[n] = c
		return c
	}
	// The deepest subtree is always under a largest child.
	for n := max(agents, 1); n > 1; depth++ {
		_, q, r := split(n, max(fanout, 1))
		n = q
		if r > 0 {
			n = q + 1
		}
	}
	return count(max(agents, 1)), depth
}

// BenchIdeal is the wall time of a bench run if the runtime cost nothing:
// the critical path through the tree, where each LLM call takes latency.
// A leaf costs `turns` calls. An internal node costs its two calls plus what
// its spawns wait for. The runtime runs a turn's sessions_spawn calls one
// after the other (a spawn may name a sibling spawned just before it), and
// each waits for its children, so a node whose children are a mix of
// subtrees and leaves pays for its largest subtree and then for its leaves.
func BenchIdeal(agents, fanout, turns int, latency time.Duration) time.Duration {
	return time.Duration(benchPath(max(agents, 1), max(fanout, 1), max(turns, 1))) * latency
}

// benchPath is the number of sequential LLM calls on the critical path of
// a subtree of size n. It is not monotonic in n (a node of size 2*fanout
// has a mix of children, one of 2*fanout+1 has none), so both child sizes
// are looked at.
func benchPath(n, fanout, turns int) int {
	if n <= 1 {
		return turns
	}
	_, q, r := split(n, fanout)
	sizes := []int{q} // every node has at least one child of size q
	if r > 0 {
		sizes = append(sizes, q+1)
	}
	// The node's first call spawns every child at once, and its second
	// follows the slowest of them.
	longest := 0
	for _, size := range sizes {
		longest = max(longest, benchPath(size, fanout, turns))
	}
	return 2 + longest
}

// BenchCalls is the number of LLM calls a bench run makes: two per
// internal node and `turns` per leaf.
func BenchCalls(agents, fanout, turns int) int {
	fanout, turns = max(fanout, 1), max(turns, 1)
	memo := map[int]int{}
	var count func(n int) int
	count = func(n int) int {
		if n <= 1 {
			return turns
		}
		if c, ok := memo[n]; ok {
			return c
		}
		k, q, r := split(n, fanout)
		c := 2 + (k-r)*count(q)
		if r > 0 {
			c += r * count(q+1)
		}
		memo[n] = c
		return c
	}
	return count(max(agents, 1))
}

// Reply implements Policy.
func (benchPolicy) Reply(req *Request) Reply {
	msgs := req.Messages
	if len(msgs) > 0 && msgs[0].Role == "system" && strings.HasPrefix(msgs[0].Content, shadowPrefix) {
		if id := identify(req); id.shadowFor != "" {
			return shadowReply(req, id.shadowFor)
		}
	}
	fu := firstUser(msgs)
	spec, ok := benchSpec{}, false
	if fu >= 0 {
		spec, ok = parseBench(msgs[fu].Content)
	}
	if !ok && len(msgs) > 0 && msgs[0].Role == "system" {
		spec, ok = parseBench(msgs[0].Content)
	}
	if !ok {
		return plainReply(req)
	}
	turn := assistantTurns(msgs) + 1
	if spec.size <= 1 {
		return benchLeaf(spec, turn)
	}
	if turn == 1 {
		return Reply{ToolCalls: benchSpawn(spec)}
	}
	// The spawn waited for the children, so its result is the last tool
	// message.
	res := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "tool" {
			res = msgs[i].Content
			break
		}
	}
	b := make([]byte, 0, 96)
	b = append(b, Prefix+" bench node size="...)
	b = strconv.AppendInt(b, int64(spec.size), 10)
	if strings.HasPrefix(strings.TrimSpace(res), `{"error"`) {
		b = append(b, ": spawning failed: "...)
		b = append(b, textcut.Clip(resultError(res), 200)...)
		return Reply{Content: string(b)}
	}
	// The last tool message is the spawn's result, or the task_wait's
	// that followed two spawns.
	var waited struct {
		Sessions []struct{ Status string } `json:"sessions"`
		Results  []struct{ Status string } `json:"results"`
	}
	json.Unmarshal([]byte(res), &waited)
	done := 0
	for _, k := range append(waited.Sessions, waited.Results...) {
		if k.Status == "completed" {
			done++
		}
	}
	b = append(b, ": "...)
	b = strconv.AppendInt(b, int64(done), 10)
	b = append(b, " children completed"...)
	return Reply{Content: string(b)}
}

var (
	emptyArgs        = json.RawMessage(`{}`)
	benchLeafAnswer  = Prefix + " bench leaf done"
	benchBroadcastAt = `{"category":"discovery","target":"siblings","message":"bench broadcast `
)

func benchLeaf(spec benchSpec, turn int) Reply {
	if turn >= spec.turns {
		return Reply{Content: benchLeafAnswer}
	}
	if turn > 1 || spec.broadcasts == 0 {
		return Reply{ToolCalls: []Call{{Name: "get_shared_context", Args: emptyArgs}}}
	}
	calls := make([]Call, spec.broadcasts)
	for i := range calls {
		b := make([]byte, 0, len(benchBroadcastAt)+8)
		b = append(b, benchBroadcastAt...)
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, `"}`...)
		calls[i] = Call{Name: "task_broadcast", Args: json.RawMessage(b)}
	}
	return Reply{ToolCalls: calls}
}

// benchSpawn starts a node's children in one turn. sessions_spawn takes one
// agent per call, so when the children are a mix of subtrees (planners,
// which may spawn) and leaves (researchers) it makes two calls, which the
// runtime runs in order: the leaves start once the subtrees are done (see
// BenchIdeal).
func benchSpawn(spec benchSpec) []Call {
	k, q, r := split(spec.size, spec.fanout)
	var planners, leaves []int
	for i := range k {
		size := q
		if i < r {
			size++
		}
		if size > 1 {
			planners = append(planners, size)
		} else {
			leaves = append(leaves, size)
		}
	}
	// Sub-orchestrators and leaves have different roles, so a node with
	// both spawns them in two calls; those run one after the other, so
	// then neither waits, and a task_wait for all the children follows.
	wait := "true"
	if len(planners) > 0 && len(leaves) > 0 {
		wait = "false"
	}
	var calls []Call
	for _, g := range []struct {
		sizes        []int
		agent, label string
	}{{planners, "planner", "node"}, {leaves, "researcher", "leaf"}} {
		if len(g.sizes) == 0 {
			continue
		}
		b := make([]byte, 0, 64+len(g.sizes)*56)
		b = append(b, `{"task":[`...)
		for i, size := range g.sizes {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = appendBenchGoal(b, benchSpec{size, spec.fanout, spec.turns, spec.broadcasts})
			b = append(b, '"')
		}
		b = append(b, `],"label":"`...)
		b = append(b, g.label...)
		b = append(b, `","agent":"`...)
		b = append(b, g.agent...)
		b = append(b, `","parallel":true,"wait":`...)
		b = append(b, wait...)
		b = append(b, '}')
		calls = append(calls, Call{Name: "sessions_spawn", Args: json.RawMessage(b)})
	}
	if wait == "false" {
		calls = append(calls, Call{Name: "task_wait", Args: json.RawMessage(`{"timeout":86400}`)})
	}
	return calls
}
