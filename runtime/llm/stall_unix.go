//go:build !windows

package llm

import (
	"os"
	"os/signal"
	"syscall"
)

// watchContinues notes every SIGCONT the process gets. Being told of the
// signal changes nothing of what it does.
func watchContinues() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGCONT)
	go func() {
		for range c {
			noteContinued()
		}
	}()
}
