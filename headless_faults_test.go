package main

import (
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
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// What a script running `swarmdeck run --headless` sees when the LLM
// server refuses for good: the runtime tests check the run itself; this
// checks the command line around it (exit status, stdout, stderr, export)
// on the real binary.
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
			hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

			out, err := exec.Command(buildSwarmdeck(t), "export", "--db", db, "--config", cfg).Output()
			if err != nil {
				t.Fatalf("export: %v", err)
			}
			var x struct {
				Run      struct{ Status, Error string }
				Sessions []struct {
					Status, Error string
					Messages      []struct{ Role, Content string }
				}
			}
			if err := json.Unmarshal(out, &x); err != nil {
				t.Fatal(err)
			}
			if x.Run.Status != "failed" || len(x.Sessions) != 1 || x.Sessions[0].Status != "failed" || !has(x.Sessions[0].Error) {
				t.Errorf("export: run %s (%q), sessions %+v", x.Run.Status, x.Run.Error, x.Sessions)
			}
			if m := x.Sessions[0].Messages; len(m) != 2 || m[0].Role != "system" || m[1].Content != "Plan a product launch" {
				t.Errorf("the messages stored before the failure: %+v", m)
			}
			logData, _ := os.ReadFile(logFile)
			for what, s := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "export": string(out), "log": string(logData)} {
				if strings.Contains(s, key) {
					t.Errorf("the API key the server echoed reached the %s", what)
				}
			}
		})
	}
}
