package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/internal/alarm"
	"github.com/swarmdeck/swarmdeck/runtime/internal/rusage"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// floorBodyBytes is the size of every request the floor sends: about the
// mean request of a bench run (its request_kb_per_call), a leaf's prompt
// plus the schemas of its tools.
const floorBodyBytes = 13 << 10

// FloorReport is what Floor measured. The JSON keys are what `swarmdeck
// bench --floor --json` prints.
type FloorReport struct {
	Agents           int     `json:"agents"`
	Fanout           int     `json:"fanout"`
	Turns            int     `json:"turns"`
	LatencyS         float64 `json:"latency_s"`
	IdealS           float64 `json:"ideal_s"`
	WallS            float64 `json:"wall_s"`
	Efficiency       float64 `json:"efficiency"`
	LLMCalls         int64   `json:"llm_calls"`
	RequestKB        float64 `json:"request_kb"`
	CPUS             float64 `json:"cpu_s"`
	CPUMicrosPerCall float64 `json:"cpu_us_per_call"`
	GoVersion        string  `json:"go_version"`
	GOMAXPROCS       int     `json:"gomaxprocs"`
}

// MarshalJSON writes the report with its efficiency null at 0 latency, as
// Report does.
func (r FloorReport) MarshalJSON() ([]byte, error) {
	type plain FloorReport
	return json.Marshal(struct {
		plain
		Efficiency *float64 `json:"efficiency"`
	}{plain(r), ratioOrNil(r.IdealS, r.Efficiency)})
}

// Floor makes the calls of a bench run of o's shape with HTTP alone: a
// bare net/http server that waits the latency from each request's
// arrival and answers with a short event stream, and the client transport
// the runtime uses, sending bodies of a typical request's size. A node
// calls, its children run in parallel, and it calls again; a leaf calls
// Turns times. No store, prompts, tools or sessions: its efficiency is
// about the most a runtime speaking HTTP/1.1 to a local model can reach on
// this machine, the reference for the runtime's own.
func Floor(ctx context.Context, o Options) (*FloorReport, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	lc := net.ListenConfig{KeepAlive: -1}
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("floor: listen: %w", err)
	}
	var served atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		if wait := o.Latency - time.Since(arrived); wait > 0 {
			a := alarm.Set(arrived.Add(o.Latency)) // as the scripted model does
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-a.C:
				t.Stop()
			case <-r.Context().Done():
				t.Stop()
				a.Cancel()
				return
			}
		}
		served.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"done"}}]}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/v1/chat/completions"
	client := llm.DefaultHTTPClient()
	defer client.CloseIdleConnections()
	body := bytes.Repeat([]byte("x"), floorBodyBytes)

	var (
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	call := func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			fail(err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			fail(err)
			return
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			fail(err)
		}
	}
	var node func(size int)
	node = func(size int) {
		kids := scripted.BenchChildren(size, o.Fanout)
		if len(kids) == 0 {
			for range o.Turns {
				call()
			}
			return
		}
		call()
		// As in the runtime, subtrees are spawned (and waited for) before
		// leaves when a node has both: see scripted.BenchIdeal.
		for _, leaves := range []bool{false, true} {
			var wg sync.WaitGroup
			for _, k := range kids {
				if (k == 1) != leaves {
					continue
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					node(k)
				}()
			}
			wg.Wait()
		}
		call()
	}

	goruntime.GC()
	cpu0 := rusage.CPU()
	t0 := time.Now()
	stop := make(chan struct{})
	if o.Progress != nil {
		go func() {
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
					fmt.Fprintf(o.Progress, "floor: %5.1fs  %d LLM calls\n", time.Since(t0).Seconds(), served.Load())
				case <-stop:
					return
				}
			}
		}()
	}
	node(o.Agents)
	wall := time.Since(t0)
	close(stop)
	cpu := rusage.CPU() - cpu0
	if ctx.Err() != nil {
		return nil, fmt.Errorf("floor interrupted after %s: %w", wall.Round(time.Millisecond), context.Cause(ctx))
	}
	if firstErr != nil {
		return nil, fmt.Errorf("floor: %w", firstErr)
	}
	rep := &FloorReport{Agents: o.Agents, Fanout: o.Fanout, Turns: o.Turns, LatencyS: o.Latency.Seconds(),
		IdealS: scripted.BenchIdeal(o.Agents, o.Fanout, o.Turns, o.Latency).Seconds(), WallS: wall.Seconds(),
		LLMCalls: served.Load(), RequestKB: float64(floorBodyBytes) / 1024, CPUS: cpu.Seconds(),
		GoVersion: goruntime.Version(), GOMAXPROCS: goruntime.GOMAXPROCS(0)}
	if rep.IdealS > 0 {
		rep.Efficiency = rep.IdealS / rep.WallS
	}
	if rep.LLMCalls > 0 {
		rep.CPUMicrosPerCall = float64(cpu.Microseconds()) / float64(rep.LLMCalls)
	}
	return rep, nil
}

// WriteFloor prints a floor report for people.
func WriteFloor(w io.Writer, r *FloorReport) error {
	_, err := fmt.Fprintf(w, `swarmdeck bench --floor: the calls of %d agents (fanout %d, %d turns per leaf) at %s latency,
with HTTP alone (no runtime), %.0f KiB per request

  ideal (critical path)  %.3f s
  wall                   %.3f s
  efficiency             %.3f
  LLM calls              %d
  CPU per call           %.0f µs (%.2f s in all)

  %s, GOMAXPROCS %d. The runtime's own efficiency for the same shape is
  'swarmdeck bench' without --floor; this is the most it could reach here.
`, r.Agents, r.Fanout, r.Turns, time.Duration(r.LatencyS*float64(time.Second)), r.RequestKB,
		r.IdealS, r.WallS, r.Efficiency, r.LLMCalls, r.CPUMicrosPerCall, r.CPUS, r.GoVersion, r.GOMAXPROCS)
	return err
}
