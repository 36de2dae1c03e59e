package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestApply(t *testing.T) {
	ms := func(d time.Duration) *time.Duration { return &d }
	count := func(n int) *int { return &n }
	ollama := "providers:\n  ollama:\n    type: openai\n    base_url: http://localhost:11434/v1\n    model: llama3.1\n"

	tests := []struct {
		name  string
		file  string
		o     Overrides
		check func(t *testing.T, c *Config)
	}{
		{"provider flag wins over the file", "provider: scripted\n", Overrides{Provider: "openai"}, func(t *testing.T, c *Config) {
			if c.Provider != "openai" {
				t.Errorf("Provider = %q", c.Provider)
			}
		}},
		{"base-url with --provider openai changes the openai entry", "", Overrides{Provider: "openai", BaseURL: "http://localhost:8080/v1"}, func(t *testing.T, c *Config) {
			if got := c.Providers["openai"].BaseURL; got != "http://localhost:8080/v1" {
				t.Errorf("openai base_url = %q", got)
			}
		}},
		{"base-url changes the provider the file selects", ollama + "provider: ollama\n", Overrides{BaseURL: "http://gpu-box:11434/v1"}, func(t *testing.T, c *Config) {
			if c.Providers["ollama"].BaseURL != "http://gpu-box:11434/v1" || c.Providers["openai"].BaseURL != "https://api.openai.com/v1" {
				t.Errorf("ollama %q openai %q", c.Providers["ollama"].BaseURL, c.Providers["openai"].BaseURL)
			}
		}},
		{"base-url with provider auto selects openai", "", Overrides{BaseURL: "http://localhost:1234/v1"}, func(t *testing.T, c *Config) {
			if c.Provider != "openai" || c.Providers["openai"].BaseURL != "http://localhost:1234/v1" {
				t.Errorf("provider %q base_url %q", c.Provider, c.Providers["openai"].BaseURL)
			}
		}},
		{"model, workspace, db", "model: a\n", Overrides{Model: "b", Workspace: "/w", DB: "/d.db"}, func(t *testing.T, c *Config) {
			if c.Model != "b" || c.Workspace != "/w" || c.DB != "/d.db" {
				t.Errorf("model %q workspace %q db %q", c.Model, c.Workspace, c.DB)
			}
		}},
		{"scripted latency", "", Overrides{ScriptedLatency: ms(0)}, func(t *testing.T, c *Config) {
			if c.Providers["scripted"].Latency != 0 {
				t.Errorf("latency = %v", c.Providers["scripted"].Latency)
			}
		}},
		// 0 is a value to apply, not an absent flag: each reply at once.
		{"scripted stream speed, in every scripted provider", "providers:\n  slow:\n    type: scripted\n    stream_speed: 5\n",
			Overrides{ScriptedSpeed: count(0)}, func(t *testing.T, c *Config) {
				p := c.Providers
				if p["scripted"].StreamSpeed != 0 || p["slow"].StreamSpeed != 0 || p["scripted"].Latency != Duration(400*time.Millisecond) {
					t.Errorf("stream speeds %d and %d, latency %v", p["scripted"].StreamSpeed, p["slow"].StreamSpeed, p["scripted"].Latency)
				}
			}},
		{"scripted stream speed and latency", "", Overrides{ScriptedSpeed: count(500), ScriptedLatency: ms(0)}, func(t *testing.T, c *Config) {
			if p := c.Providers["scripted"]; p.StreamSpeed != 500 || p.Latency != 0 {
				t.Errorf("stream speed %d, latency %v", p.StreamSpeed, p.Latency)
			}
		}},
		{"no flags change nothing", ollama, Overrides{}, func(t *testing.T, c *Config) {
			if want := mustParse(t, ollama); !reflect.DeepEqual(c, want) {
				t.Errorf("got %s", asJSON(t, c))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.file)
			if err := c.Apply(tt.o); err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestApplyErrors(t *testing.T) {
	ms := func(d time.Duration) *time.Duration { return &d }
	negative := -1
	tests := []struct {
		name string
		file string
		o    Overrides
		want string // the start of the error, naming the flag, and a part of the advice
		hint string
	}{
		{"unknown provider", "", Overrides{Provider: "olama"}, `--provider: "olama" is not a configured provider`, "configured: openai, scripted; or auto"},
		{"base-url with scripted", "", Overrides{Provider: "scripted", BaseURL: "http://localhost:1/v1"}, "--base-url: ", "scripted model, which has no URL"},
		{"base-url with scripted from the file", "provider: scripted\n", Overrides{BaseURL: "http://localhost:1/v1"}, "--base-url: ", "--provider"},
		{"base-url not a URL", "", Overrides{BaseURL: "localhost:11434"}, "--base-url: ", "not an http(s) URL"},
		{"base-url port out of range", "", Overrides{BaseURL: "http://127.0.0.1:184912/v1"}, "--base-url: ", "port 184912, which is not a port number from 1 to 65535"},
		{"base-url port 0", "", Overrides{BaseURL: "http://127.0.0.1:0/v1"}, "--base-url: ", "port 0, which is not a port number"},
		// Quoted as typed, not as Go would escape it.
		{"base-url words", "", Overrides{BaseURL: "not a url"}, "--base-url: ", `"not a url" is not an http(s) URL`},
		// A space in a query parses, and would go into the request line.
		{"base-url with a space", "", Overrides{BaseURL: "http://127.0.0.1:8080/v1?tag=a b"}, "--base-url: ", `"http://127.0.0.1:8080/v1?tag=a b" has a space, which a URL cannot carry: write it as %20`},
		{"negative latency", "", Overrides{ScriptedLatency: ms(-time.Second)}, "--scripted-latency: ", "negative"},
		{"negative stream speed", "", Overrides{ScriptedSpeed: &negative}, "--scripted-stream-speed: -1 is negative", "use 0 to send each reply at once"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.file)
			before := asJSON(t, c)
			// The flags that are fine must not be applied either.
			tt.o.Model = "changed"
			err := c.Apply(tt.o)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.hint) {
				t.Fatalf("Apply error = %v, want %q ... %q", err, tt.want, tt.hint)
			}
			if after := asJSON(t, c); after != before {
				t.Errorf("a failed Apply changed the config:\n%s", after)
			}
		})
	}
}

// A session holding the *Provider from before must not see it change.
func TestApplyDoesNotMutateSharedProviders(t *testing.T) {
	c := Defaults()
	openai, scripted := c.Providers["openai"], c.Providers["scripted"]
	lat := time.Second
	if err := c.Apply(Overrides{Provider: "openai", BaseURL: "http://x/v1", ScriptedLatency: &lat}); err != nil {
		t.Fatal(err)
	}
	if openai.BaseURL != "https://api.openai.com/v1" || scripted.Latency != Duration(400*time.Millisecond) {
		t.Error("Apply edited provider entries in place")
	}
	if c.Providers["scripted"].Latency != Duration(time.Second) {
		t.Error("latency not applied")
	}
}

// Outvoted names the edits of settings that a flag decides, and only those.
func TestOutvoted(t *testing.T) {
	ms := func(d time.Duration) *time.Duration { return &d }
	ollama := "providers:\n  ollama:\n    type: openai\n    base_url: http://localhost:11434/v1\n"
	tests := []struct {
		name        string
		before, now string
		o           Overrides
		want        []string
	}{
		{"an edit no flag decides", "model: a\n", "model: b\n", Overrides{}, nil},
		{"an edit a flag decides", "model: a\n", "model: b\n", Overrides{Model: "m"}, []string{"model"}},
		{"a flag, and its setting left alone", "model: a\n", "model: a\nlimits:\n  max_turns_per_session: 3\n", Overrides{Model: "m"}, nil},
		{"the scripted model's pace, in each scripted provider", "providers:\n  slow:\n    type: scripted\n",
			"providers:\n  scripted:\n    type: scripted\n    latency: 2s\n  slow:\n    type: scripted\n    latency: 3s\n",
			Overrides{ScriptedLatency: ms(0)}, []string{"providers.scripted.latency", "providers.slow.latency"}},
		{"a scripted provider added", "", "providers:\n  fast:\n    type: scripted\n    latency: 0s\n", Overrides{ScriptedLatency: ms(0)}, nil},
		{"base-url of the provider the file selects", ollama + "provider: ollama\n", strings.Replace(ollama, "11434", "9999", 1) + "provider: ollama\n",
			Overrides{BaseURL: "http://gpu:1/v1"}, []string{"providers.ollama.base_url"}},
		// --base-url follows provider:, whose own change is told apart
		{"provider: changed under --base-url", ollama, ollama + "provider: ollama\n", Overrides{BaseURL: "http://gpu:1/v1"}, nil},
		{"base-url with provider auto is openai's", "", "providers:\n  openai:\n    type: openai\n    base_url: http://elsewhere/v1\n",
			Overrides{BaseURL: "http://gpu:1/v1"}, []string{"providers.openai.base_url"}},
		{"workspace, db and provider", "", "workspace: /w\ndb: /d.db\nprovider: openai\n",
			Overrides{Workspace: "/x", DB: "/e.db", Provider: "scripted"}, []string{"db", "provider", "workspace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Outvoted(mustParse(t, tt.before).Flagged(tt.o, ""), mustParse(t, tt.now).Flagged(tt.o, ""))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Outvoted = %q, want %q", got, tt.want)
			}
		})
	}
	// A resume took the provider from its run, and --base-url changes its
	// entry, not the one provider: names.
	before, now := mustParse(t, ollama), mustParse(t, strings.Replace(ollama, "11434", "9999", 1)+"  openai:\n    type: openai\n    base_url: http://elsewhere/v1\n")
	o := Overrides{BaseURL: "http://gpu:1/v1"}
	if got := Outvoted(before.Flagged(o, "ollama"), now.Flagged(o, "ollama")); !reflect.DeepEqual(got, []string{"providers.ollama.base_url"}) {
		t.Errorf("under a resume on ollama: Outvoted = %q", got)
	}
	for setting, flag := range map[string]string{"model": "--model", "providers.x.base_url": "--base-url", "providers.s.latency": "--scripted-latency",
		"providers.s.stream_speed": "--scripted-stream-speed", "db": "--db", "workspace": "--workspace", "provider": "--provider"} {
		if got := FlagOf(setting); got != flag {
			t.Errorf("FlagOf(%q) = %q, want %q", setting, got, flag)
		}
	}
}
