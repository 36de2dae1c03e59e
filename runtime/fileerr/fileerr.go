// Package fileerr says what went wrong with a file in the words an error
// message for a person needs: what kind of file a path names when it is
// not the one expected, and the system's reason without the path that
// the message already gives.
package fileerr

import (
	"errors"
	"io/fs"
)

// Kind names the kind of file mode m is, with its article: "a named
// pipe", "a directory".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// Reason is the system's reason in err, without the path that
// fs.PathError puts in front of it.
func Reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
