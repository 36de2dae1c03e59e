package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestResolve(t *testing.T) {
	const extra = `
providers:
  aaa:
    type: openai
    base_url: https://aaa.example/v1
    api_key_env: AAA_KEY
    model: a-model
  ollama:
    type: openai
    base_url: http://localhost:11434/v1
    model: llama3.1
`
	tests := []struct {
		name      string
		file      string
		env       map[string]string
		wantName  string
		wantModel string
		wantKey   string
	}{
		{"auto without any key is scripted", "", nil, "scripted", ScriptedModel, ""},
		{"auto with OPENAI_API_KEY is openai", "", map[string]string{"OPENAI_API_KEY": "sk-1"}, "openai", "gpt-4o-mini", "sk-1"},
		{"auto prefers openai over names sorting first", extra, map[string]string{"OPENAI_API_KEY": "sk-1", "AAA_KEY": "k"}, "openai", "gpt-4o-mini", "sk-1"},
		{"auto takes another provider whose key is set", extra, map[string]string{"AAA_KEY": "k"}, "aaa", "a-model", "k"},
		{"auto never picks a keyless server", extra, nil, "scripted", ScriptedModel, ""},
		{"explicit keyless server", extra + "provider: ollama\n", nil, "ollama", "llama3.1", ""},
		{"model: overrides the provider's", "model: gpt-4.1\nprovider: openai\n", map[string]string{"OPENAI_API_KEY": "sk-1"}, "openai", "gpt-4.1", "sk-1"},
		{"model: applies to scripted too", "model: demo\nprovider: scripted\n", nil, "scripted", "demo", ""},
		{"scripted ignores the environment", "provider: scripted\n", map[string]string{"OPENAI_API_KEY": "sk-1"}, "scripted", ScriptedModel, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := mustParse(t, tt.file).Resolve(env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if r.Name != tt.wantName || r.Model != tt.wantModel || r.APIKey != tt.wantKey {
				t.Errorf("Resolve = %s %s key %q, want %s %s key %q", r.Name, r.Model, r.APIKey, tt.wantName, tt.wantModel, tt.wantKey)
			}
			if r.Provider.Type == "" {
				t.Error("Resolved.Provider is empty")
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		want string
	}{
		{"openai without its key", "provider: openai\n", "set OPENAI_API_KEY"},
		{"openai with no key variable", "provider: openai\nproviders:\n  openai:\n    api_key_env: \"\"\n", "set providers.openai.api_key_env"},
		{"server without model", "provider: local\nproviders:\n  local:\n    type: openai\n    base_url: http://localhost:8080/v1\n", "set providers.local.model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustParse(t, tt.file).Resolve(env(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Resolve error = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestResolvedCopiesAndHidesTheKey(t *testing.T) {
	c := mustParse(t, "provider: openai\nproviders:\n  openai:\n    headers: {X-Title: swarmdeck}\n    base_url: https://me:pw-secret@gw/v1?api-key=q-secret\n")
	r, err := c.Resolve(env(map[string]string{"OPENAI_API_KEY": "sk-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	r.Provider.Headers["X-Title"] = "changed"
	r.Provider.Model = "changed"
	if c.Providers["openai"].Headers["X-Title"] != "swarmdeck" || c.Providers["openai"].Model != "gpt-4o-mini" {
		t.Error("changing the Resolved changed the Config")
	}

	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("provider", "resolved", r)
	for _, s := range []string{fmt.Sprint(r), fmt.Sprintf("%+v", r), fmt.Sprintf("%#v", r), logged.String()} {
		for _, key := range []string{"sk-secret", "pw-secret", "q-secret"} {
			if strings.Contains(s, key) {
				t.Errorf("a secret (%s) leaks: %s", key, s)
			}
		}
	}
}

// A key read from a file of variables with Windows line ends ends in a CR;
// the key is what comes before it, and a key of blanks is no key.
func TestResolveTrimsTheKey(t *testing.T) {
	c := mustParse(t, "provider: auto\nproviders:\n  openai:\n    base_url: http://localhost:8080/v1\n")
	r, err := c.Resolve(env(map[string]string{"OPENAI_API_KEY": "sk-abc123\r"}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "openai" || r.APIKey != "sk-abc123" {
		t.Errorf("Resolve chose %s with key %q; want openai with %q", r.Name, r.APIKey, "sk-abc123")
	}
	if r, err := c.Resolve(env(map[string]string{"OPENAI_API_KEY": " \n"})); err != nil || r.Name != "scripted" {
		t.Errorf("with a key of blanks Resolve chose %s (%v); want scripted", r.Name, err)
	}
}
