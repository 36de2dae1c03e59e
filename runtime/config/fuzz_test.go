package config

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse feeds Parse arbitrary bytes. Whatever the input, Parse must not
// panic, every error must be one line that starts with the file name (that
// is what lets a user find the problem), and a configuration it accepts must
// pass validation again. Seeds: testdata/fuzz/FuzzParse and config.yaml.
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(rootConfig); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "fuzz.yaml:") {
				t.Fatalf("error does not start with the file name: %q", msg)
			}
			if strings.ContainsAny(msg, "\r\n") {
				t.Fatalf("error spans lines: %q", msg)
			}
			return
		}
		if cfg == nil {
			t.Fatal("no error and no config")
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted a config that Validate rejects: %v", err)
		}
	})
}
