package config

import "reflect"

// NotLive names the settings that differ between old and next and that a
// reload does not put in force: the provider and model, the workspace, the
// database and the log, and ui at the next start; the two max_concurrent_
// limits from the next run or resume. A reload says so instead of "reloaded"
// alone, which read as if they had taken effect.
func NotLive(old, next *Config) (atStart, atNextRun []string) {
	if old == nil || next == nil {
		return nil, nil
	}
	if old.Provider != next.Provider {
		atStart = append(atStart, "provider")
	}
	if old.Model != next.Model {
		atStart = append(atStart, "model")
	}
	if providersEdited(old, next) {
		atStart = append(atStart, "providers")
	}
	for _, f := range []struct {
		name      string
		old, next string
	}{{"workspace", old.Workspace, next.Workspace}, {"db", old.DB, next.DB}, {"log_file", old.LogFile, next.LogFile}} {
		if f.old != f.next {
			atStart = append(atStart, f.name)
		}
	}
	if !reflect.DeepEqual(old.UI, next.UI) {
		atStart = append(atStart, "ui")
	}
	if old.Limits.MaxConcurrentLLMCalls != next.Limits.MaxConcurrentLLMCalls {
		atNextRun = append(atNextRun, "limits.max_concurrent_llm_calls")
	}
	if old.Limits.MaxConcurrentSessions != next.Limits.MaxConcurrentSessions {
		atNextRun = append(atNextRun, "limits.max_concurrent_sessions")
	}
	return atStart, atNextRun
}

// providersEdited tells whether the file's providers changed from old to
// next, other than the scripted model's pace, which reloads live. A
// base_url that --base-url replaces in next is no edit that takes effect
// (a reload says the flag wins), and the flag moving to another entry
// with provider: changes no entry of the file.
func providersEdited(old, next *Config) bool {
	o, n := unpaced(old.Providers), unpaced(next.Providers)
	setURL := func(ps map[string]Provider, name, url string) {
		if p, ok := ps[name]; ok {
			p.BaseURL = url
			ps[name] = p
		}
	}
	if old.urlFlagged != "" {
		setURL(o, old.urlFlagged, old.fileURL)
	}
	if t := next.urlFlagged; t != "" {
		setURL(o, t, "")
		setURL(n, t, "")
	}
	return !reflect.DeepEqual(o, n)
}

// unpaced is providers without the scripted model's pace, which reloads
// live.
func unpaced(ps map[string]*Provider) map[string]Provider {
	out := make(map[string]Provider, len(ps))
	for name, p := range ps {
		if p == nil {
			continue
		}
		c := *p
		c.Latency, c.StreamSpeed = 0, 0
		out[name] = c
	}
	return out
}
