package config

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Overrides are the command-line flags that change the configuration. Empty
// strings and a nil pointer mean the flag was not given.
type Overrides struct {
	Provider        string         // --provider
	BaseURL         string         // --base-url
	Model           string         // --model
	Workspace       string         // --workspace
	DB              string         // --db
	ScriptedLatency *time.Duration // --scripted-latency
	ScriptedSpeed   *int           // --scripted-stream-speed
}

// Apply puts the flags over the file: a flag always wins. --base-url changes
// the selected provider's entry: the one --provider names, else the one
// provider: names in the file, and with provider auto the "openai" entry
// (pointing swarmdeck at a local server should not depend on whether
// OPENAI_API_KEY happens to be set). --scripted-latency and
// --scripted-stream-speed change every scripted provider. Errors name the
// flag; on error c is unchanged.
func (c *Config) Apply(o Overrides) error {
	provider := c.Provider
	if o.Provider != "" {
		if _, ok := c.Providers[o.Provider]; !ok && o.Provider != ProviderAuto {
			return fmt.Errorf("--provider: %q is not a configured provider (configured: %s; or auto)", o.Provider, strings.Join(c.providerNames(), ", "))
		}
		provider = o.Provider
	}

	var target string // provider entry that --base-url changes
	if o.BaseURL != "" {
		if msg := checkURL(o.BaseURL); msg != "" {
			return fmt.Errorf("--base-url: %s", msg)
		}
		target = baseURLTarget(provider)
		provider = target
		pr, ok := c.Providers[target]
		switch {
		case !ok || pr == nil:
			return fmt.Errorf("--base-url: there is no %q provider to point at it; name one with --provider", target)
		case pr.Type == TypeScripted:
			return fmt.Errorf("--base-url: provider %q is the built-in scripted model, which has no URL; choose an openai-type provider with --provider (for example --provider openai)", target)
		}
	}

	if o.ScriptedLatency != nil && *o.ScriptedLatency < 0 {
		return fmt.Errorf("--scripted-latency: %s is negative; use 0 for no delay", *o.ScriptedLatency)
	}
	if o.ScriptedSpeed != nil && *o.ScriptedSpeed < 0 {
		return fmt.Errorf("--scripted-stream-speed: %d is negative; use 0 to send each reply at once", *o.ScriptedSpeed)
	}

	// Every check passed: now change c. Entries are replaced by modified
	// copies, not edited in place, so a *Provider handed out earlier (to a
	// running session, say) does not change under its holder.
	c.Provider = provider
	if target != "" {
		pr := *c.Providers[target]
		c.urlFlagged, c.fileURL = target, pr.BaseURL
		pr.BaseURL = o.BaseURL
		c.Providers[target] = &pr
	}
	if o.ScriptedLatency != nil || o.ScriptedSpeed != nil {
		for name, pr := range c.Providers {
			if pr != nil && pr.Type == TypeScripted {
				cp := *pr
				if o.ScriptedLatency != nil {
					cp.Latency = Duration(*o.ScriptedLatency)
				}
				if o.ScriptedSpeed != nil {
					cp.StreamSpeed = *o.ScriptedSpeed
				}
				c.Providers[name] = &cp
			}
		}
	}
	if o.Model != "" {
		c.Model = o.Model
	}
	if o.Workspace != "" {
		c.Workspace = expandHome(o.Workspace)
		c.forget("workspace")
	}
	if o.DB != "" {
		c.DB = expandHome(o.DB)
		c.forget("db")
	}
	return nil
}

// baseURLTarget is the provider entry --base-url changes when provider is
// the one selected.
func baseURLTarget(provider string) string {
	if provider == ProviderAuto {
		return "openai"
	}
	return provider
}

// Flagged is what the file c (as read, before Apply) says for each setting
// a flag of o takes the place of, keyed by the setting ("model",
// "providers.scripted.latency"). Two of them, from the file as it was and
// as it is, tell an edit that a reload cannot show, since the flag wins.
// selected, when not empty, is the provider the run uses, whose entry
// --base-url changes, where o does not say (a resume took it from the run).
func (c *Config) Flagged(o Overrides, selected string) map[string]string {
	out := make(map[string]string)
	if o.Provider != "" {
		out["provider"] = c.Provider
	}
	if o.Model != "" {
		out["model"] = c.Model
	}
	if o.Workspace != "" {
		out["workspace"] = c.Workspace
	}
	if o.DB != "" {
		out["db"] = c.DB
	}
	if o.BaseURL != "" {
		provider := c.Provider
		if o.Provider != "" {
			provider = o.Provider
		}
		if selected != "" {
			provider = selected
		}
		target := baseURLTarget(provider)
		if pr := c.Providers[target]; pr != nil {
			out["providers."+target+".base_url"] = pr.BaseURL
		}
	}
	for name, pr := range c.Providers {
		if pr == nil || pr.Type != TypeScripted {
			continue
		}
		if o.ScriptedLatency != nil {
			out["providers."+name+".latency"] = pr.Latency.String()
		}
		if o.ScriptedSpeed != nil {
			out["providers."+name+".stream_speed"] = fmt.Sprint(pr.StreamSpeed)
		}
	}
	return out
}

// FlagOf is the flag that takes the place of setting, as Flagged names it.
func FlagOf(setting string) string {
	switch {
	case strings.HasSuffix(setting, ".base_url"):
		return "--base-url"
	case strings.HasSuffix(setting, ".latency"):
		return "--scripted-latency"
	case strings.HasSuffix(setting, ".stream_speed"):
		return "--scripted-stream-speed"
	}
	return "--" + setting
}

// Outvoted lists, sorted, the settings of Flagged that both old and next
// have, with another value. One that only one of them has is no edit of
// what a flag decides: the flag applies to another entry (--base-url
// follows provider:), or to an entry added or removed.
func Outvoted(old, next map[string]string) []string {
	var out []string
	for k, v := range next {
		if w, ok := old[k]; ok && w != v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
