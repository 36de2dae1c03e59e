package llm

// watchContinues does nothing on Windows, where processes are not stopped
// and continued by signals.
func watchContinues() {}
