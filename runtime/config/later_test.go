package config

import (
	"slices"
	"testing"
	"time"
)

func TestNotLive(t *testing.T) {
	tests := []struct {
		name            string
		change          func(c *Config)
		atStart, atNext []string
	}{
		{"nothing", func(c *Config) {}, nil, nil},
		{"live only", func(c *Config) {
			c.Limits.MaxTurnsPerSession++
			c.Providers["scripted"].Latency = Duration(time.Second)
			c.Providers["scripted"].StreamSpeed = 5
			c.Coordination.EnableBroadcasts = false
		}, nil, nil},
		{"at the next start", func(c *Config) {
			c.Provider = "openai"
			c.Model = "big"
			c.Providers["openai"].BaseURL = "http://127.0.0.1:1/v1"
			c.Workspace = "/elsewhere"
			c.UI.Theme = "light"
		}, []string{"provider", "model", "providers", "workspace", "ui"}, nil},
		{"at the next run", func(c *Config) {
			c.Limits.MaxConcurrentLLMCalls++
			c.Limits.MaxConcurrentSessions++
		}, nil, []string{"limits.max_concurrent_llm_calls", "limits.max_concurrent_sessions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, next := Defaults(), Defaults()
			tt.change(next)
			atStart, atNext := NotLive(old, next)
			if !slices.Equal(atStart, tt.atStart) || !slices.Equal(atNext, tt.atNext) {
				t.Errorf("NotLive = %v, %v; want %v, %v", atStart, atNext, tt.atStart, tt.atNext)
			}
		})
	}
}

// With --base-url given, the flag replaces one entry's base_url: an edit of
// that base_url is the flag's to outvote, and provider: moving the flag to
// another entry edits no entry of the file.
func TestNotLiveUnderBaseURL(t *testing.T) {
	withLocal := func(c *Config) {
		c.Provider = "openai"
		c.Providers["local"] = &Provider{Type: TypeOpenAI, BaseURL: "http://127.0.0.1:8080/v1", Model: "m"}
	}
	tests := []struct {
		name    string
		change  func(c *Config)
		atStart []string
	}{
		{"nothing", func(c *Config) {}, nil},
		{"provider moves the flag", func(c *Config) { c.Provider = "local" }, []string{"provider"}},
		{"the flagged base_url", func(c *Config) { c.Providers["openai"].BaseURL = "http://10.0.0.1/v1" }, nil},
		{"another entry's base_url", func(c *Config) { c.Providers["local"].BaseURL = "http://10.0.0.1/v1" }, []string{"providers"}},
		{"the flagged entry's model", func(c *Config) { c.Providers["openai"].Model = "big" }, []string{"providers"}},
		{"provider and the entry the flag left", func(c *Config) {
			c.Provider = "local"
			c.Providers["openai"].BaseURL = "http://10.0.0.1/v1"
		}, []string{"provider", "providers"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, next := Defaults(), Defaults()
			withLocal(old)
			withLocal(next)
			tt.change(next)
			flag := Overrides{BaseURL: "http://127.0.0.1:9999/v1"}
			if err := old.Apply(flag); err != nil {
				t.Fatal(err)
			}
			if err := next.Apply(flag); err != nil {
				t.Fatal(err)
			}
			atStart, atNext := NotLive(old, next)
			if !slices.Equal(atStart, tt.atStart) || atNext != nil {
				t.Errorf("NotLive = %v, %v; want %v, []", atStart, atNext, tt.atStart)
			}
		})
	}
}
