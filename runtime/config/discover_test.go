package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFind(t *testing.T) {
	home, xdg, work := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Chdir(work)
	userPath := filepath.Join(xdg, "swarmdeck", "config.yaml")

	find := func(explicit string) string {
		t.Helper()
		got, err := Find(explicit)
		if err != nil {
			t.Fatalf("Find(%q): %v", explicit, err)
		}
		return got
	}

	if got := find(""); got != "" {
		t.Errorf("no file anywhere: Find = %q, want \"\" (built-in defaults)", got)
	}

	writeFile(t, userPath, "model: user\n")
	if got := find(""); got != userPath {
		t.Errorf("only the XDG file: Find = %q, want %q", got, userPath)
	}

	writeFile(t, filepath.Join(work, "config.yaml"), "model: local\n")
	if got := find(""); got != "config.yaml" {
		t.Errorf("./config.yaml and the XDG file: Find = %q, want config.yaml", got)
	}

	explicit := filepath.Join(t.TempDir(), "mine.yaml")
	writeFile(t, explicit, "model: mine\n")
	if got := find(explicit); got != explicit {
		t.Errorf("--config given: Find = %q, want %q", got, explicit)
	}

	missing := filepath.Join(work, "missing.yaml")
	if _, err := Find(missing); err == nil || !strings.HasPrefix(err.Error(), "--config "+missing+": no such file") {
		t.Errorf("--config missing: err = %v", err)
	}
	if _, err := Find(work); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("--config a directory: err = %v", err)
	}
}

func TestFindFallsBackToHomeConfig(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "relative/dir") // the XDG spec says to ignore it
	t.Chdir(t.TempDir())
	want := filepath.Join(home, ".config", "swarmdeck", "config.yaml")
	writeFile(t, want, "model: m\n")
	if got, err := Find(""); err != nil || got != want {
		t.Errorf("Find = %q, %v; want %q", got, err, want)
	}
}

func TestDefaultPaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)

	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	if got, want := DefaultDBPath(), filepath.Join(home, ".local", "share", "swarmdeck", "swarmdeck.db"); got != want {
		t.Errorf("DefaultDBPath() = %q, want %q", got, want)
	}
	if got, want := DefaultLogPath(), filepath.Join(home, ".local", "state", "swarmdeck", "swarmdeck.log"); got != want {
		t.Errorf("DefaultLogPath() = %q, want %q", got, want)
	}

	data, state := t.TempDir(), t.TempDir()
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("XDG_STATE_HOME", state)
	if got, want := DefaultDBPath(), filepath.Join(data, "swarmdeck", "swarmdeck.db"); got != want {
		t.Errorf("DefaultDBPath() = %q, want %q", got, want)
	}
	if got, want := DefaultLogPath(), filepath.Join(state, "swarmdeck", "swarmdeck.log"); got != want {
		t.Errorf("DefaultLogPath() = %q, want %q", got, want)
	}

	cfg := Defaults()
	if cfg.DBPath() != DefaultDBPath() || cfg.LogPath() != DefaultLogPath() {
		t.Error("empty db/log_file do not fall back to the XDG paths")
	}
	cfg.DB, cfg.LogFile = "x.db", "x.log"
	if cfg.DBPath() != "x.db" || cfg.LogPath() != "x.log" {
		t.Error("db/log_file set in the config are not used")
	}
}

// Without HOME and XDG_DATA_HOME the database falls back to the current
// directory, and the configuration says so unless db: (or --db) names one.
func TestDBInWorkingDir(t *testing.T) {
	for _, tc := range []struct {
		home, data, db string
		want           bool
	}{
		{"", "", "", true},
		{"", "relative/dir", "", true}, // the XDG spec says to ignore it
		{"", "", "my.db", false},
		{t.TempDir(), "", "", false},
		{"", t.TempDir(), "", false},
	} {
		t.Setenv("HOME", tc.home)
		t.Setenv("XDG_DATA_HOME", tc.data)
		cfg := Defaults()
		cfg.DB = tc.db
		if got := cfg.DBInWorkingDir(); got != tc.want {
			t.Errorf("HOME=%q XDG_DATA_HOME=%q db=%q: DBInWorkingDir() = %v, want %v (the database is %s)", tc.home, tc.data, tc.db, got, tc.want, cfg.DBPath())
		}
	}
}
