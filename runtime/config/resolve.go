package config

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/swarmdeck/swarmdeck/runtime/internal/secret"
)

// Resolved is the provider a run talks to, with everything needed to call it.
type Resolved struct {
	Name     string   // the providers: entry chosen
	Provider Provider // a copy of that entry; changing it changes nothing else
	Model    string   // the model to request
	APIKey   string   // read from the variable Provider.APIKeyEnv names; may be ""
}

// String and GoString keep the API key out of anything that prints a
// Resolved with fmt (a debug line, a panic message).
func (r Resolved) String() string {
	return fmt.Sprintf("provider %s (%s, %s) model %s, api key %s", r.Name, r.Provider.Type, r.shownURL(), r.Model, redacted(r.APIKey))
}

// GoString is what %#v prints; see String.
func (r Resolved) GoString() string { return "config.Resolved{" + r.String() + "}" }

// LogValue keeps the API key out of slog output.
func (r Resolved) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", r.Name),
		slog.String("type", r.Provider.Type),
		slog.String("base_url", r.shownURL()),
		slog.String("model", r.Model),
		slog.String("api_key", redacted(r.APIKey)),
	)
}

// shownURL is the base URL with its secrets (a password, a key in its
// query) hidden.
func (r Resolved) shownURL() string {
	shown, _ := secret.HideInURL(r.Provider.BaseURL)
	return shown
}

func redacted(key string) string {
	if key == "" {
		return "unset"
	}
	return "set"
}

// Resolve chooses the provider, model and API key for a run. getenv is
// os.Getenv in production; tests pass a map's lookup.
//
// With provider auto it takes the first openai-type provider whose
// api_key_env variable is set (the one named "openai" first, then the others
// by name), else "scripted", so swarmdeck works offline out of the box and
// uses OpenAI as soon as a key is exported. The model is the top-level model:
// if set, else the provider's, else ScriptedModel for a scripted provider.
// The key is only read here and never stored in the Config.
func (c *Config) Resolve(getenv func(string) string) (Resolved, error) {
	name := c.Provider
	if name == ProviderAuto {
		name = c.autoProvider(getenv)
	}
	pr, ok := c.Providers[name]
	if !ok || pr == nil {
		return Resolved{}, fmt.Errorf("provider %q is not configured (configured: %s)", name, strings.Join(c.providerNames(), ", "))
	}
	r := Resolved{Name: name, Provider: *pr, Model: c.Model}
	r.Provider.Headers = maps.Clone(pr.Headers)
	if r.Model == "" {
		r.Model = pr.Model
	}

	switch pr.Type {
	case TypeScripted:
		if r.Model == "" {
			r.Model = ScriptedModel
		}
		return r, nil
	case TypeOpenAI:
	default:
		return Resolved{}, fmt.Errorf("provider %q has type %q; it must be openai or scripted", name, pr.Type)
	}

	if r.Model == "" {
		msg := fmt.Sprintf("provider %q names no model: set providers.%s.model in the config file, or pass --model", name, name)
		for _, key := range []string{"providers." + name + ".model", "providers." + name} {
			if where, ok := c.Where(key); ok {
				return Resolved{}, fmt.Errorf("%s: %s", where, msg)
			}
		}
		return Resolved{}, errors.New(msg)
	}
	if pr.APIKeyEnv != "" {
		// A key read from a file of variables may end in a line break or
		// a blank (a CR of a Windows line end above all): none of it is
		// the key, and an error that quoted the key as the server got it
		// would not be redacted.
		r.APIKey = strings.TrimSpace(getenv(pr.APIKeyEnv))
	}
	// OpenAI itself always needs a key; local servers (Ollama, llama.cpp,
	// vLLM, LM Studio) usually want none, and a hosted one that does will
	// say so itself with a 401.
	if r.APIKey == "" && isOpenAIHost(pr.BaseURL) {
		if pr.APIKeyEnv == "" {
			return Resolved{}, fmt.Errorf("provider %q talks to api.openai.com but names no key variable: set providers.%s.api_key_env (for example OPENAI_API_KEY) and export that variable", name, name)
		}
		return Resolved{}, fmt.Errorf("provider %q needs an API key: set %s in the environment (or run with --provider scripted to try swarmdeck offline)", name, pr.APIKeyEnv)
	}
	return r, nil
}

// autoProvider is the provider auto stands for.
func (c *Config) autoProvider(getenv func(string) string) string {
	names := c.providerNames()
	if i := slices.Index(names, "openai"); i > 0 {
		names = append([]string{"openai"}, slices.Delete(names, i, i+1)...)
	}
	for _, name := range names {
		pr := c.Providers[name]
		if pr != nil && pr.Type == TypeOpenAI && pr.APIKeyEnv != "" && strings.TrimSpace(getenv(pr.APIKeyEnv)) != "" {
			return name
		}
	}
	return "scripted"
}

func isOpenAIHost(base string) bool {
	u, err := url.Parse(base)
	return err == nil && u.Hostname() == "api.openai.com"
}
