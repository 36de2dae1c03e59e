package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/swarmdeck/swarmdeck/runtime/fileerr"
)

// FileName is the name swarmdeck looks for in the current directory and in
// its XDG config directory.
const FileName = "config.yaml"

// Find returns the configuration file to load: explicit (the --config flag)
// if given, which must exist; else ./config.yaml if present; else
// $XDG_CONFIG_HOME/swarmdeck/config.yaml if present. It returns "" when there
// is none, meaning the built-in defaults.
func Find(explicit string) (string, error) {
	if explicit != "" {
		fi, err := os.Stat(explicit)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("--config %s: no such file", explicit)
		case err != nil:
			return "", fmt.Errorf("--config %s: %w", explicit, fileerr.Reason(err))
		case fi.IsDir():
			return "", fmt.Errorf("--config %s: is a directory; give the path of the config file", explicit)
		case waitsToRead(fi):
			return "", fmt.Errorf("--config %s: is %s, whose reading waits for a writer; give the path of the config file", explicit, fileerr.Kind(fi.Mode()))
		}
		return explicit, nil
	}
	for _, path := range []string{FileName, UserConfigPath()} {
		if path == "" {
			continue
		}
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			// Unreadable is not absent: silently falling back to the
			// defaults would run with settings the user did not choose.
			return "", fmt.Errorf("%s: %w", path, fileerr.Reason(err))
		case fi.IsDir():
			return "", fmt.Errorf("%s: is a directory, not a config file", path)
		case waitsToRead(fi):
			return "", fmt.Errorf("%s: is %s, not a config file", path, fileerr.Kind(fi.Mode()))
		}
		return path, nil
	}
	return "", nil
}

// UserConfigPath is $XDG_CONFIG_HOME/swarmdeck/config.yaml (by default
// ~/.config/swarmdeck/config.yaml), or "" when no home directory is known.
func UserConfigPath() string {
	dir := xdgDir("XDG_CONFIG_HOME", ".config")
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "swarmdeck", FileName)
}

// DefaultDBPath is where the store lives when db: is empty:
// $XDG_DATA_HOME/swarmdeck/swarmdeck.db, by default
// ~/.local/share/swarmdeck/swarmdeck.db. Without a home directory (and
// XDG_DATA_HOME) it is swarmdeck/swarmdeck.db under the current directory,
// where the user will at least see it; `swarmdeck runs` names the file.
func DefaultDBPath() string {
	return filepath.Join(xdgDir("XDG_DATA_HOME", ".local", "share"), "swarmdeck", "swarmdeck.db")
}

// DBInWorkingDir reports whether the database is the last resort of
// DefaultDBPath, swarmdeck/swarmdeck.db under the current directory: db:
// is empty (no --db either), and neither XDG_DATA_HOME nor a home
// directory says where data lives. A run then says so, as the next one
// started elsewhere would not find it.
func (c *Config) DBInWorkingDir() bool {
	return c.DB == "" && xdgDir("XDG_DATA_HOME", ".local", "share") == ""
}

// DefaultLogPath is where the log goes when log_file: is empty:
// $XDG_STATE_HOME/swarmdeck/swarmdeck.log, by default
// ~/.local/state/swarmdeck/swarmdeck.log.
func DefaultLogPath() string {
	return filepath.Join(xdgDir("XDG_STATE_HOME", ".local", "state"), "swarmdeck", "swarmdeck.log")
}

// DBPath is the database file to open: db: if set, else DefaultDBPath().
func (c *Config) DBPath() string {
	if c.DB != "" {
		return c.DB
	}
	return DefaultDBPath()
}

// LogPath is the log file to write: log_file: if set, else DefaultLogPath().
func (c *Config) LogPath() string {
	if c.LogFile != "" {
		return c.LogFile
	}
	return DefaultLogPath()
}

// xdgDir returns $env when it is an absolute path (the XDG spec says to
// ignore relative ones), else home joined with fallback, else "".
func xdgDir(env string, fallback ...string) string {
	if dir := os.Getenv(env); dir != "" && filepath.IsAbs(dir) {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return ""
	}
	return filepath.Join(append([]string{home}, fallback...)...)
}

// waitsToRead reports whether reading the file would wait for another
// process: a named pipe, or a socket. A device is read as it is
// (--config /dev/null is the defaults).
func waitsToRead(fi fs.FileInfo) bool {
	return fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0
}
