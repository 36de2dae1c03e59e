package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Cobra's own argument checks speak of "arg(s)" and call a stray word an
// unknown command; these say what the command wanted instead.
// argsWithUsage adds the command's name and usage line to each.

// noArgs refuses words after a command that takes none.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	return fmt.Errorf("takes no arguments, and was given %s", quoteArgs(args))
}

// atLeastOne asks for the argument a command cannot do without; what says
// what it is and where to find one.
func atLeastOne(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("give %s", what)
		}
		return nil
	}
}

// atMostOne refuses more than one argument, naming what the one may be.
func atMostOne(what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > 1 {
			return fmt.Errorf("takes one %s at most, and was given %d: %s", what, len(args), quoteArgs(args))
		}
		return nil
	}
}

// oneRunID refuses more than one run id, for a command that needs one
// (and says so itself when none is given).
func oneRunID(_ *cobra.Command, args []string) error {
	if len(args) > 1 {
		return fmt.Errorf("takes one run id, and was given %d: %s", len(args), quoteArgs(args))
	}
	return nil
}

// quoteArgs shows the words as the shell passed them, each quoted, so that
// one word with spaces is told from several.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}
