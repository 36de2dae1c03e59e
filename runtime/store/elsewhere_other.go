//go:build !unix

package store

// openElsewhere reports whether another process has the database at path
// open: never, where that is not asked.
func openElsewhere(string) bool { return false }
