package main

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
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// What a script running `swarmdeck run --headless` sees when the LLM
// server refuses for good: the runtime tests check the run itself; this
// checks the command line around it (exit status, stdout, stderr, export)
// on the real binary, and that the command stderr gives to continue the
// run does so once the server answers again.
func TestHeadlessCLIReportsFatalServerFault(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	const key = "sk-test-0123456789abcdef"
	for _, tc := range []struct {
		name   string
		status int
		body   string
		json   bool
		reason []string
	}{
		{"insufficient_quota --json", 429,
			`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`,
			true, []string{"You exceeded your current quota", "check the account's plan, billing or credits"}},
		{"401 on stderr", 401,
			`{"error":{"message":"Incorrect API key provided: ` + key + `.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			false, []string{"401", "Incorrect API key provided", "check the API key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			var fixed atomic.Bool
			model := scripted.New(scripted.Config{})
			defer model.Close()
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if fixed.Load() {
					model.Handler().ServeHTTP(w, r)
					return
				}
				io.Copy(io.Discard, r.Body)
				requests.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer hs.Close()
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			db := filepath.Join(dir, "swarmdeck.db")
			logFile := filepath.Join(dir, "swarmdeck.log")
			os.WriteFile(cfg, []byte(fmt.Sprintf(`provider: flaky
providers:
  flaky:
    type: openai
    base_url: %q
    api_key_env: SWARMDECK_TEST_KEY
    model: test-model
workspace: %q
log_file: %q
`, hs.URL+"/v1", dir, logFile)), 0o644)
			args := []string{"run", "--headless", "--db", db, "--config", cfg, "Plan a product launch"}
			if tc.json {
				args = append(args[:1], append([]string{"--json"}, args[1:]...)...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, buildSwarmdeck(t), args...)
			cmd.Env = append(isolatedEnv(t), "SWARMDECK_TEST_KEY="+key)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("the run did not end: it hangs")
			}
			code := cmd.ProcessState.ExitCode()
			if code != 1 {
				t.Fatalf("exit %d (%v), want 1\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("the server got %d requests: a fault retrying cannot fix was retried", n)
			}
			has := func(s string) bool {
				for _, r := range tc.reason {
					if !strings.Contains(s, r) {
						return false
					}
				}
				return true
			}
			if tc.json {
				lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
				var last struct {
					Type string `json:"type"`
					Run  struct{ Status, Error string }
				}
				if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "run.finished" {
					t.Fatalf("the last stdout line is not run.finished: %s", lines[len(lines)-1])
				}
				if last.Run.Status != "failed" || !has(last.Run.Error) {
					t.Errorf("run.finished says %s (%q), want failed with %q", last.Run.Status, last.Run.Error, tc.reason)
				}
			}
			// With --json too: a script that only checks the exit status
			// shows its user stderr, not the events.
			if !has(stderr.String()) {
				t.Errorf("stderr does not say why the run failed:\n%s", stderr.String())
			}

			// export reads the run back as a script would; it returns the
			// JSON as printed, to look for the key in.
			type stored struct {
				Run      struct{ Status, Error string }
				Sessions []struct {
					Status, Error string
					Messages      []struct{ Role, Content string }
				}
			}
			export := func(x *stored) string {
				t.Helper()
				out, err := exec.Command(buildSwarmdeck(t), "export", "--db", db, "--config", cfg).Output()
				if err != nil {
					t.Fatalf("export: %v", err)
				}
				if err := json.Unmarshal(out, x); err != nil {
					t.Fatal(err)
				}
				return string(out)
			}
			var x stored
			out := export(&x)
			if x.Run.Status != "failed" || len(x.Sessions) != 1 || x.Sessions[0].Status != "failed" || !has(x.Sessions[0].Error) {
				t.Errorf("export: run %s (%q), sessions %+v", x.Run.Status, x.Run.Error, x.Sessions)
			}
			if m := x.Sessions[0].Messages; len(m) != 2 || m[0].Role != "system" || m[1].Content != "Plan a product launch" {
				t.Errorf("the messages stored before the failure: %+v", m)
			}

			// Credit added, key replaced: the command stderr names
			// continues the run where it failed.
			m := regexp.MustCompile("once the cause is fixed, continue it with: (swarmdeck resume [^\n]+)").FindStringSubmatch(stderr.String())
			if m == nil {
				t.Fatalf("stderr does not say how to continue the run:\n%s", stderr.String())
			}
			fields := strings.Fields(m[1])
			if fields[2] != "--headless" || fields[len(fields)-1] == "" || !strings.Contains(m[1], "--db "+db) {
				t.Errorf("the command to continue the run: %s", m[1])
			}
			fixed.Store(true)
			resume := exec.CommandContext(ctx, buildSwarmdeck(t), fields[1:]...)
			resume.Env = append(isolatedEnv(t), "SWARMDECK_TEST_KEY="+key)
			if out, err := resume.CombinedOutput(); err != nil || ctx.Err() != nil {
				t.Fatalf("%s: %v\n%s", m[1], err, out)
			}
			var after stored
			resumed := export(&after)
			if after.Run.Status != "completed" || after.Sessions[0].Status != "completed" || after.Sessions[0].Messages[1].Content != "Plan a product launch" {
				t.Errorf("after the resume: run %s (%q), root %s", after.Run.Status, after.Run.Error, after.Sessions[0].Status)
			}

			logData, _ := os.ReadFile(logFile)
			for what, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "export": out + resumed, "log": string(logData)} {
				if strings.Contains(s, key) {
					t.Errorf("the API key the server echoed reached the %s", what)
				}
			}
		})
	}
}

// A headless run whose terminal closes (SIGHUP), that is told to quit
// (SIGQUIT), or whose reader goes away
// (a closed pipe on stdout) is stopped and stored "interrupted", with the
// command that continues it, instead of dying with the run left "running".
func TestHeadlessStopsResumableOnHangupAndClosedOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	bin := buildSwarmdeck(t)
	for _, tc := range []struct {
		name   string
		stop   func(cmd *exec.Cmd, out io.ReadCloser)
		stdout bool   // stdout is read to its end: run.finished is its last line
		stderr string // in the message
	}{
		{"SIGHUP", func(cmd *exec.Cmd, _ io.ReadCloser) { cmd.Process.Signal(syscall.SIGHUP) }, true,
			"interrupted: run "},
		// Go's own SIGQUIT would dump the goroutines and exit 2, which
		// says "bad usage" here, leaving the run "running".
		{"SIGQUIT", func(cmd *exec.Cmd, _ io.ReadCloser) { cmd.Process.Signal(syscall.SIGQUIT) }, true,
			"interrupted: run "},
		{"closed stdout", func(_ *exec.Cmd, out io.ReadCloser) { out.Close() }, false,
			"its output could not be written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "swarmdeck.db")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "run", "--headless", "--json", "--db", db, "--provider", "scripted",
				"--scripted-latency", "200ms", "--workspace", dir, "Plan a product launch")
			cmd.Env = isolatedEnv(t)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(out)
			var runID string
			for runID == "" {
				line, err := br.ReadBytes('\n')
				if err != nil {
					t.Fatalf("no run.started on stdout: %v\n%s", err, stderr.String())
				}
				var ev struct {
					Type  string
					RunID string `json:"run_id"`
				}
				json.Unmarshal(line, &ev)
				if ev.Type == "run.started" {
					runID = ev.RunID
				}
			}
			tc.stop(cmd, out)
			var last []byte
			if tc.stdout {
				for {
					line, err := br.ReadBytes('\n')
					if len(bytes.TrimSpace(line)) > 0 {
						last = line
					}
					if err != nil {
						break
					}
				}
			}
			cmd.Wait()
			if ctx.Err() != nil {
				t.Fatal("the process did not stop")
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Fatalf("exit status %d (%s), want 1\nstderr:\n%s", code, cmd.ProcessState, stderr.String())
			}
			want := "continue it with: swarmdeck resume --headless --provider scripted --scripted-latency 200ms --db " + db + " " + runID
			if !strings.Contains(stderr.String(), tc.stderr) || !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr does not say %q and %q:\n%s", tc.stderr, want, stderr.String())
			}
			if tc.stdout {
				var ev struct {
					Type string
					Run  struct {
						Status  string
						EndedAt time.Time `json:"ended_at"`
					}
				}
				if json.Unmarshal(last, &ev); ev.Type != "run.finished" || ev.Run.Status != "interrupted" || ev.Run.EndedAt.IsZero() {
					t.Errorf("the last --json line is not run.finished interrupted: %s", last)
				}
			}
			runs, err := exec.Command(bin, "runs", "--db", db).Output()
			if err != nil {
				t.Fatalf("runs: %v", err)
			}
			if !strings.Contains(string(runs), runID) || !regexp.MustCompile(runID+` +interrupted`).Match(runs) {
				t.Errorf("the stored run is not interrupted:\n%s", runs)
			}
		})
	}
}
