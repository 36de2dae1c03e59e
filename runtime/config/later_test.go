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
