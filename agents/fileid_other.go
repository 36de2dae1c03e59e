//go:build !unix

package agents

import "io/fs"

// links is how many names the file has; where the system does not say,
// 1.
func links(fs.FileInfo) int { return 1 }

// foreign reports whether the file belongs to another user; where the
// system does not say, false.
func foreign(fs.FileInfo) bool { return false }
