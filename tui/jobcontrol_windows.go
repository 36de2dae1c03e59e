package tui

// jobControl is false on Windows, where a console program is not stopped
// and continued by its shell.
func jobControl() bool { return false }
