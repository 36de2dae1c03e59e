package tui

import (
	"context"
	"os"

	tea "charm.land/bubbletea/v2"
)

// followCont does nothing on Windows, where processes are not stopped and
// continued by signals.
func followCont(context.Context, *tea.Program, *os.File) {}

// quietStop does nothing on Windows, which has no background stops.
func quietStop() {}
