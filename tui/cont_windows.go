package tui

import (
	"context"
	"os"
	"sync/atomic"

	tea "charm.land/bubbletea/v2"
)

// followCont does nothing on Windows, where processes are not stopped and
// continued by signals.
func followCont(context.Context, *tea.Program, *os.File, *atomic.Bool) {}

// stopProcess does nothing on Windows (jobControl is false there).
func stopProcess(*tea.Program) {}

// quietEnd does nothing on Windows, which has no background stops.
func quietEnd(*os.File, bool) func() { return func() {} }

// quietStop does nothing on Windows, which has no background stops.
func quietStop() {}
