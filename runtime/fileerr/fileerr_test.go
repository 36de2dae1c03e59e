package fileerr

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestKind(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		0o644:                             "a file",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeSymlink | 0o777:            "a symbolic link",
		fs.ModeNamedPipe | 0o644:          "a named pipe",
		fs.ModeSocket | 0o755:             "a socket",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice:                     "a device",
		fs.ModeIrregular:                  "a special file",
	} {
		if got := Kind(m); got != want {
			t.Errorf("Kind(%v) = %q, want %q", m, got, want)
		}
	}
}

func TestReason(t *testing.T) {
	_, err := os.Open(filepath.Join(t.TempDir(), "missing"))
	if got := Reason(err); !errors.Is(got, syscall.ENOENT) || got.Error() != syscall.ENOENT.Error() {
		t.Errorf("Reason of a failed open = %q, want the system's reason alone", got)
	}
	plain := errors.New("no path here")
	if got := Reason(plain); got != plain {
		t.Errorf("Reason of an error without a path = %v", got)
	}
}
