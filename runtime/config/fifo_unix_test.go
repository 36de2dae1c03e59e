//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A named pipe where the configuration is looked for is refused: reading it
// would wait for a writer, with no word, for ever. /dev/null is read, as
// the defaults.
func TestConfigThatIsAPipeIsRefused(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	pipe := filepath.Join(work, "pipe.yaml")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	if _, err := Find(pipe); err == nil || !strings.Contains(err.Error(), "--config "+pipe+": is a named pipe, whose reading waits for a writer") {
		t.Errorf("--config a pipe: %v", err)
	}
	if _, err := Load(pipe); err == nil || !strings.Contains(err.Error(), "is a named pipe, not a config file") {
		t.Errorf("Load of a pipe: %v", err)
	}
	if err := syscall.Mkfifo(filepath.Join(work, FileName), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(""); err == nil || !strings.Contains(err.Error(), "config.yaml: is a named pipe, not a config file") {
		t.Errorf("./config.yaml a pipe: %v", err)
	}
	if _, err := os.Stat(os.DevNull); err == nil {
		if cfg, err := Load(os.DevNull); err != nil || cfg.Model != Defaults().Model {
			t.Errorf("Load(%s) = %v; want the defaults", os.DevNull, err)
		}
	}
}
