//go:build !unix

package store

// writable reports whether this process may write path. Where it cannot
// be asked without writing, it is taken as no: a database is then read as
// a file that does not change (see OpenReadOnly).
func writable(string) bool { return false }
