package bench

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// The project's performance targets on a 2-core machine.
const (
	TargetEfficiencyLarge  = 0.97 // 1,000 agents at 1 s latency
	TargetEfficiencySmall  = 0.98 // 10 agents at 50 ms
	TargetPeakRSSMB        = 300  // 1,000 agents
	TargetCPUMicrosPerTurn = 200  // at 0 latency
	TargetFirstRequestMS   = 15   // process start to first LLM request
	TargetPerSubAgentMS    = 1    // wall time per additional parallel sub-agent
	targetLargeAgents      = 1000
	targetLargeLatency     = time.Second
	targetSmallAgents      = 10
	targetSmallLatency     = 50 * time.Millisecond
)

// Check is one target that applies to a report, and whether it is met.
type Check struct {
	Name   string `json:"name"`   // the report's JSON key
	Target string `json:"target"` // like "<= 300"
	OK     bool   `json:"ok"`
}

// checks are the targets that apply to this run's shape: each was set for
// one configuration, and holds for the easier ones (fewer agents, a longer
// latency) but says nothing about harder ones.
func (r *Report) checks() []Check {
	var out []Check
	lat := time.Duration(r.LatencyS * float64(time.Second))
	switch {
	case r.RequestedAgents <= targetSmallAgents && lat >= targetSmallLatency:
		out = append(out, Check{"efficiency", ">= " + ftoa(TargetEfficiencySmall), r.Efficiency >= TargetEfficiencySmall})
	case r.RequestedAgents <= targetLargeAgents && lat >= targetLargeLatency:
		out = append(out, Check{"efficiency", ">= " + ftoa(TargetEfficiencyLarge), r.Efficiency >= TargetEfficiencyLarge})
	}
	if r.RequestedAgents <= targetLargeAgents {
		out = append(out, Check{"peak_rss_mb", "<= " + ftoa(TargetPeakRSSMB), r.PeakRSSMB <= TargetPeakRSSMB})
	}
	if lat == 0 {
		out = append(out, Check{"cpu_us_per_turn", "<= " + ftoa(TargetCPUMicrosPerTurn), r.CPUMicrosPerTurn <= TargetCPUMicrosPerTurn})
	}
	return out
}

func (r *StartupReport) checks() []Check {
	return []Check{
		{"first_request_ms.median", "<= " + ftoa(TargetFirstRequestMS), r.FirstRequestMS.Median <= TargetFirstRequestMS},
		{"per_sub_agent_ms.median", "<= " + ftoa(TargetPerSubAgentMS), r.PerSubAgentMS.Median <= TargetPerSubAgentMS},
	}
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// target finds the check of a key and renders it for a table: the bound in
// the figure's unit and a mark.
func target(checks []Check, key, unit string) (string, string) {
	for _, c := range checks {
		if c.Name != key {
			continue
		}
		t := strings.Replace(strings.Replace(c.Target, "<=", "≤", 1), ">=", "≥", 1)
		if unit != "" {
			t += " " + unit
		}
		if c.OK {
			return t, "✓"
		}
		return t, "✗"
	}
	return "", ""
}

// WriteReport prints a report for people: an aligned table with the
// targets that apply next to the figures.
func WriteReport(w io.Writer, r *Report) error {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	broadcasts := fmt.Sprintf("%d %s per leaf", r.BroadcastsPerAgent, plural(r.BroadcastsPerAgent, "broadcast", "broadcasts"))
	if r.Turns == 1 && r.BroadcastsPerAgent > 0 {
		// A leaf broadcasts on its first turn and answers on its last.
		broadcasts = "no broadcasts (a leaf of one turn has no turn to broadcast in; give --turns 2 or more)"
	}
	fanout := fmt.Sprintf("fanout %d", r.Fanout)
	if used := len(scripted.BenchChildren(r.RequestedAgents, r.Fanout)); r.RequestedAgents > 0 && used < r.Fanout {
		// The root has the most children of any node.
		fanout = fmt.Sprintf("fanout %d: --fanout %d takes %d agents", used, r.Fanout, r.Fanout+1)
	}
	fmt.Fprintf(w, "swarmdeck bench: %d agents (tree of depth %d, %s), %d %s per leaf at %s latency, %s\n\n",
		r.Agents, r.Depth, fanout, r.Turns, plural(r.Turns, "turn", "turns"),
		time.Duration(r.LatencyS*float64(time.Second)), broadcasts)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	row := func(name, value, key, unit string) {
		t, mark := target(r.Targets, key, unit)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, value, t, mark)
	}
	fmt.Fprintf(tw, "  \tmeasured\ttarget\t\n")
	row("ideal (critical path)", fmt.Sprintf("%.3f s", r.IdealS), "", "")
	row("wall", fmt.Sprintf("%.3f s", r.WallS), "", "")
	eff := fmt.Sprintf("%.3f", r.Efficiency)
	if r.IdealS == 0 {
		eff = "n/a at 0 latency"
	}
	row("efficiency (ideal / wall)", eff, "efficiency", "")
	row("peak RSS", fmt.Sprintf("%.1f MB", r.PeakRSSMB), "peak_rss_mb", "MB")
	calls := fmt.Sprintf("%d", r.LLMCalls)
	if int64(r.ExpectedLLMCalls) != r.LLMCalls {
		calls += fmt.Sprintf(" (the shape makes %d: retries or extra turns)", r.ExpectedLLMCalls)
	}
	row("LLM calls", calls, "", "")
	row("CPU per LLM turn", fmt.Sprintf("%.0f µs (%.2f s in all)", r.CPUMicrosPerTurn, r.CPUS), "cpu_us_per_turn", "µs")
	row("events", fmt.Sprintf("%d", r.Events), "", "")
	row("stored messages", fmt.Sprintf("%d (%.1f per session)", r.StoredMessages, r.StoredMessagesPerSession), "", "")
	row("broadcasts delivered", fmt.Sprintf("%d, from %d broadcasts (%.0f/s)", r.BroadcastsDelivered, r.Broadcasts, r.BroadcastsDeliveredPerS), "", "")
	if err := flushTable(w, tw, &table); err != nil {
		return err
	}
	kept := " (in a temporary database, removed: --db FILE keeps a run for view and export)"
	if r.DB != "" {
		kept = " in " + r.DB
	}
	_, err := fmt.Fprintf(w, "\n  %s, GOMAXPROCS %d, %d GC cycles, %.1f MB heap at the end, run %s%s\n",
		r.GoVersion, r.GOMAXPROCS, r.GCCycles, r.HeapAllocMB, r.RunID, kept)
	return err
}

// WriteStartup prints a startup report for people.
func WriteStartup(w io.Writer, r *StartupReport) error {
	fmt.Fprintf(w, "swarmdeck bench --startup: whole processes against an HTTP model with %s latency, %d runs of each\n\n",
		time.Duration(r.LatencyS*float64(time.Second)), r.Runs)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	row := func(name string, s Stats, key string) {
		t, mark := target(r.Targets, key, "ms")
		fmt.Fprintf(tw, "  %s\t%.2f ms\t%.2f ms\t%s\t%s\n", name, s.Median, s.P90, t, mark)
	}
	fmt.Fprintf(tw, "  \tmedian\tp90\ttarget\t\n")
	row("swarmdeck --help, start to exit", r.ExecBaselineMS, "")
	row("run --headless, start to first LLM request", r.FirstRequestMS, "first_request_ms.median")
	row("run of 1 LLM call, start to exit", r.RunWallMS, "")
	row("root + 1 sub-agent, start to exit", r.FanoutOneWallMS, "")
	row(fmt.Sprintf("root + %d parallel sub-agents, start to exit", r.Fanout), r.FanoutWallMS, "")
	row("each additional parallel sub-agent", r.PerSubAgentMS, "per_sub_agent_ms.median")
	if err := flushTable(w, tw, &table); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n  %s, GOMAXPROCS %d; targets apply to the medians\n", r.GoVersion, r.GOMAXPROCS)
	return err
}

// flushTable writes a table without the padding tabwriter leaves at the
// end of lines whose last columns are empty.
func flushTable(w io.Writer, tw *tabwriter.Writer, table *bytes.Buffer) error {
	if err := tw.Flush(); err != nil {
		return err
	}
	var out bytes.Buffer
	for line := range strings.Lines(table.String()) {
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := w.Write(out.Bytes())
	return err
}
