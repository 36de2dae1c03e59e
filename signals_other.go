//go:build !unix

package main

import "io"

// inBackground is false where there is no job control to put a process in
// the background.
func inBackground(io.Writer) bool { return false }
