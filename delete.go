package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmdeck/swarmdeck/runtime"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// now is the clock prune measures ages by; tests move it.
var now = time.Now

// compactWait is how long compacting waits for other connections to close
// the database before it leaves the file as it is.
const compactWait = 2 * time.Second

func deleteCmd(cf *commonFlags, stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:        "delete RUN_ID...",
		SuggestFor: []string{"remove", "rm", "del"},
		Short:      "Delete stored runs and give their space back",
		Long: `delete removes each run named (by its id, or the start of it that only one
run's id has) and everything stored for it: sessions, messages, inboxes,
broadcasts, plans, delegations, questions and the event log. The person's
remembered answers to questions, which belong to no run, stay.

Every id is checked first: when one names no run, more than one, or a run
that a swarmdeck process is running, nothing is deleted. A run whose
process died (stopped* in swarmdeck runs) can be deleted.

Then the database file is compacted, and its size before and after shown.
While another swarmdeck process has the database open the file keeps its
size: the space is reused by later runs, and "swarmdeck prune
--vacuum-only" gives it back once no swarmdeck is running.`,
		Example: `  swarmdeck delete r-3f9a1c
  swarmdeck delete r-3f9 r-0b2
  swarmdeck runs --json | jq -r 'select(.status == "failed") | .id' | xargs swarmdeck delete`,
		Args: atLeastOne("the id of each run to delete (`swarmdeck runs` lists them)"),
		ValidArgsFunction: completeRunIDList(cf, func(r *store.Run, live bool) bool {
			return !live // delete would refuse it
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cf.onlyDB = true
			db, cfg, err := storedDB(cf)
			if err != nil {
				return notFound(err)
			}
			before := store.FileSize(db)
			st, err := cf.openToChange(cfg, db, "delete")
			if err != nil {
				return err
			}
			defer st.Close()
			claimed, err := claimRuns(ctx, st, args)
			if err != nil {
				return err
			}
			deleted := 0
			for i, c := range claimed {
				last, _ := st.LastWrite(ctx, c.run.ID)
				_, err := st.DeleteRun(ctx, c.run.ID)
				c.release()
				if err != nil {
					for _, rest := range claimed[i+1:] {
						rest.release()
					}
					return &exitError{runtime.ExitFailed, deleteFailed(st.Path(), c.run.ID, deleted, err)}
				}
				deleted++
				fmt.Fprintln(stdout, runLineText("deleted", &c.run, last))
			}
			st.Close()
			return cf.reclaim(ctx, db, before, deleted, stdout, stderr)
		},
	}
}

// claimed is a run to delete, with its run lock.
type claimed struct {
	run     store.Run
	release func()
}

// claimRuns finds the runs that ids name and takes their run locks. When
// any id names no run, more than one, or a run a process is running, it
// takes none and says of every such id why: a delete does all or nothing.
func claimRuns(ctx context.Context, st *store.Store, ids []string) ([]claimed, error) {
	var out []claimed
	var problems []string
	seen := map[string]bool{}
	for _, id := range ids {
		r, err := st.Run(ctx, id)
		if err != nil {
			if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrAmbiguous) {
				for _, c := range out {
					c.release()
				}
				return nil, &exitError{runtime.ExitFailed, readErr(st.Path(), err)}
			}
			problems = append(problems, err.Error())
			continue
		}
		if seen[r.ID] {
			continue // named twice, or by two prefixes
		}
		seen[r.ID] = true
		release, err := runtime.ClaimStoredRun(st.Path(), r.ID)
		if err != nil {
			var held *runtime.RunHeldError
			if errors.As(err, &held) {
				err = heldText(held, r.Status)
			}
			problems = append(problems, err.Error())
			continue
		}
		// The run as it is now: a resume may have taken it further, even
		// to its end, between the look above and the claim, and what is
		// said of it ("stopped when its process died") must be true.
		if r, err = st.Run(ctx, r.ID); err != nil {
			release()
			if !errors.Is(err, store.ErrNotFound) {
				for _, c := range out {
					c.release()
				}
				return nil, &exitError{runtime.ExitFailed, readErr(st.Path(), err)}
			}
			problems = append(problems, err.Error())
			continue
		}
		out = append(out, claimed{run: *r, release: release})
	}
	if len(problems) == 0 {
		return out, nil
	}
	for _, c := range out {
		c.release()
	}
	if len(problems) == 1 {
		return nil, usageErr(fmt.Errorf("nothing deleted: %s", problems[0]))
	}
	return nil, usageErr(fmt.Errorf("nothing deleted:\n  %s", strings.Join(problems, "\n  ")))
}

// heldText says that a process runs a run, or is deleting it, in the
// words of a delete.
func heldText(h *runtime.RunHeldError, status string) error {
	switch {
	case h.Deleting:
		return h
	case status == "" || status == runtime.RunRunning:
		return fmt.Errorf("run %s is running in %s: stop that process first (its run stays resumable), then delete it", h.RunID, h.Holder())
	}
	// A dashboard still open on the run it ran, which holds it for a
	// message that would reopen it.
	return fmt.Errorf("run %s (%s) is still open in %s: quit that dashboard first, then delete it", h.RunID, status, h.Holder())
}

// deleteFailed is the error of a delete that failed on run id after
// deleting others.
func deleteFailed(path, id string, deleted int, err error) error {
	if store.IsBusy(err) {
		err = fmt.Errorf("%s; try again then (%w)", store.BusyReason(path), err)
	}
	err = fmt.Errorf("deleting run %s from %s: %w", id, path, err)
	if deleted > 0 {
		err = fmt.Errorf("%w; the %d runs listed above are deleted, run %s and those after it are not", err, deleted, id)
	}
	return err
}

// runLineText is one line about a run a command deletes: what was done,
// its id, status, last activity and goal. A run stored as running is one
// whose process died (a live one is never deleted): it is not called
// running.
func runLineText(did string, r *store.Run, last time.Time) string {
	if last.IsZero() {
		last = r.CreatedAt
	}
	status := r.Status
	if status == runtime.RunRunning {
		status = "stopped when its process died"
	}
	return fmt.Sprintf("%s %s (%s, last active %s): %s", did, r.ID, status, last.Local().Format("2006-01-02 15:04"),
		runtime.TerminalText(runtime.OneLine(r.Goal, 60)))
}

func pruneCmd(cf *commonFlags, stdout, stderr io.Writer) *cobra.Command {
	var olderThan string
	var dryRun, vacuumOnly bool
	cmd := &cobra.Command{
		Use:        "prune --older-than AGE [--dry-run] | --vacuum-only",
		SuggestFor: []string{"clean", "cleanup", "gc", "vacuum"},
		Short:      "Delete the runs that ended longer ago than a given age",
		Long: `prune deletes the stored runs that have ended (completed, failed,
cancelled, interrupted, or stopped* because their process died) and that
nothing was written to for longer than --older-than: 30d, 12h, 90m, 1d12h
(d is days, h hours, m minutes: a month is 30d).
A run that a swarmdeck process is running is never deleted. Each deleted
run is listed, and how many there were.

Then the database file is compacted, and its size before and after shown.
While another swarmdeck process has the database open the file keeps its
size: the space is reused by later runs, and prune --vacuum-only gives it
back once no swarmdeck is running.`,
		Example: `  swarmdeck prune --older-than 30d --dry-run
  swarmdeck prune --older-than 30d
  swarmdeck prune --vacuum-only`,
		Args: func(cmd *cobra.Command, args []string) error {
			if strings.HasPrefix(olderThan, "--") {
				// The flag after it was taken for its value.
				return fmt.Errorf("--older-than takes an age, such as 30d, not %q", olderThan)
			}
			if len(args) == 1 {
				if _, err := parseAge(args[0]); err == nil {
					return fmt.Errorf("the age goes after --older-than: `swarmdeck prune --older-than %s`", args[0])
				}
			}
			return noArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			f := cmd.Flags()
			if vacuumOnly && (f.Changed("older-than") || dryRun) {
				return usageErr(errors.New("--vacuum-only deletes no run: leave out --older-than and --dry-run, or --vacuum-only"))
			}
			var age time.Duration
			if !vacuumOnly {
				if !f.Changed("older-than") {
					return usageErr(errors.New("prune: give --older-than AGE, the age of the runs to delete, e.g. --older-than 30d (or --vacuum-only to only compact the database)"))
				}
				var err error
				if age, err = parseAge(olderThan); err != nil {
					return usageErr(err)
				}
			}
			cf.onlyDB = true
			db, cfg, err := storedDB(cf)
			if err != nil {
				return notFound(err)
			}
			before := store.FileSize(db)
			if vacuumOnly {
				if ok, known := store.Writable(db); known && !ok {
					return readOnlyErr(db, "prune --vacuum-only")
				}
				return cf.reclaim(ctx, db, before, -1, stdout, stderr)
			}
			var st *store.Store
			if dryRun {
				// Read only, as runs and export do.
				var closeStore func()
				if st, closeStore, err = openStore(cf); err != nil {
					return err
				}
				defer closeStore()
			} else {
				if st, err = cf.openToChange(cfg, db, "prune"); err != nil {
					return err
				}
				defer st.Close()
			}
			cutoff := now().Add(-age)
			idle, err := st.IdleRuns(ctx, cutoff)
			if err != nil {
				return &exitError{runtime.ExitFailed, readErr(st.Path(), err)}
			}
			layout := "2006-01-02 15:04"
			if age < time.Hour {
				layout += ":05" // minutes would hide the age
			}
			since := fmt.Sprintf("last active before %s, %s ago", cutoff.Local().Format(layout), strings.TrimSpace(olderThan))
			n := 0
			for i := range idle {
				r := &idle[i]
				if !prunable(st.Path(), &r.Run, stderr) {
					continue
				}
				if dryRun {
					fmt.Fprintln(stdout, runLineText("would delete", &r.Run, r.LastWrite))
					n++
					continue
				}
				ok, err := pruneRun(ctx, st, r.ID, cutoff, stdout, stderr)
				if err != nil {
					return &exitError{runtime.ExitFailed, deleteFailed(st.Path(), r.ID, n, err)}
				}
				if ok {
					n++
				}
			}
			switch {
			case dryRun:
				fmt.Fprintf(stdout, "%s would be deleted (ended, and %s); nothing was deleted (--dry-run)\n", runCount(n), since)
				return nil
			case n == 0:
				fmt.Fprintf(stdout, "no run ended and %s: nothing deleted\n", since)
			default:
				fmt.Fprintf(stdout, "%s deleted\n", runCount(n))
			}
			st.Close()
			return cf.reclaim(ctx, db, before, n, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.StringVar(&olderThan, "older-than", "", "delete the runs nothing was written to for this long: 30d, 12h, 1d12h")
	f.BoolVar(&dryRun, "dry-run", false, "list the runs that would be deleted, and delete nothing")
	f.BoolVar(&vacuumOnly, "vacuum-only", false, "delete no run: only give the space deleted runs left back to the file system")
	return cmd
}

// prunable reports whether prune may delete run r: one that ended, or one
// stored as running whose process is gone. Of a run stored as running that
// it keeps it says why on w.
func prunable(dbPath string, r *store.Run, w io.Writer) bool {
	switch r.Status {
	case runtime.RunCompleted, runtime.RunFailed, runtime.RunCancelled, runtime.RunInterrupted:
		return true
	}
	live, known := runtime.RunIsLive(dbPath, r.ID)
	switch {
	case !known:
		fmt.Fprintf(w, "swarmdeck: kept run %s: it is stored as %s, and whether a process runs it cannot be told here\n", r.ID, runtime.TerminalText(r.Status))
		return false
	case live:
		fmt.Fprintf(w, "swarmdeck: kept run %s: a swarmdeck process is running it\n", r.ID)
		return false
	}
	return r.Status == runtime.RunRunning
}

// pruneRun deletes run id under its run lock, if it still ended and has
// been idle since before cutoff once the lock is held: a resume may have
// taken it up since it was listed.
func pruneRun(ctx context.Context, st *store.Store, id string, cutoff time.Time, stdout, stderr io.Writer) (bool, error) {
	release, err := runtime.ClaimStoredRun(st.Path(), id)
	if err != nil {
		var held *runtime.RunHeldError
		if errors.As(err, &held) {
			var status string
			if r, err := st.Run(ctx, id); err == nil {
				status = r.Status
			}
			err = heldText(held, status)
		}
		fmt.Fprintf(stderr, "swarmdeck: kept: %s\n", runtime.TerminalText(err.Error()))
		return false, nil
	}
	defer release()
	r, err := st.Run(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil // deleted meanwhile
	}
	if err != nil {
		return false, err
	}
	last, err := st.LastWrite(ctx, id)
	if err != nil {
		return false, err
	}
	if !last.Before(cutoff) || r.ID != id {
		return false, nil
	}
	switch r.Status {
	case runtime.RunCompleted, runtime.RunFailed, runtime.RunCancelled, runtime.RunInterrupted, runtime.RunRunning:
		// Running: stored so by a process that is gone, as the lock says.
	default:
		return false, nil
	}
	if _, err := st.DeleteRun(ctx, id); err != nil {
		return false, err
	}
	fmt.Fprintln(stdout, runLineText("deleted", r, last))
	return true, nil
}

// runCount is "1 run" or "N runs".
func runCount(n int) string {
	if n == 1 {
		return "1 run"
	}
	return strconv.Itoa(n) + " runs"
}

// parseAge reads the age of --older-than: a Go duration (12h, 90m,
// 1h30m), or days (30d, 1.5d, 1d12h).
func parseAge(s string) (time.Duration, error) {
	bad := fmt.Errorf("--older-than %q is not an age: give days, hours or minutes with their unit, e.g. 30d, 12h, 90m, 1d12h", s)
	t := strings.TrimSpace(s)
	notAbove := fmt.Errorf("--older-than %s: give an age above zero, e.g. 30d", t)
	tooLong := fmt.Errorf("--older-than %s: give at most %dd (a hundred years)", t, maxAgeDays)
	switch {
	case t == "":
		return 0, bad
	case strings.HasPrefix(t, "-") || t == "0":
		return 0, notAbove
	}
	var days time.Duration
	rest := t
	if i := strings.IndexByte(t, 'd'); i >= 0 {
		n, err := strconv.ParseFloat(t[:i], 64)
		switch {
		case errors.Is(err, strconv.ErrRange), err == nil && n > maxAgeDays && !math.IsInf(n, 0):
			return 0, tooLong
		case err != nil, math.IsNaN(n), math.IsInf(n, 0):
			return 0, bad
		}
		days = time.Duration(n * float64(24*time.Hour))
		rest = t[i+1:]
	}
	var more time.Duration
	if rest != "" {
		var err error
		if more, err = time.ParseDuration(rest); err != nil {
			if durationShape.MatchString(rest) {
				return 0, tooLong // well formed, and past what a duration holds
			}
			return 0, bad
		}
	}
	switch {
	case more < 0:
		return 0, fmt.Errorf("--older-than %s: give no part below zero, e.g. 1d12h or 23h", t)
	case more > maxAgeDays*24*time.Hour-days:
		return 0, tooLong
	case days+more <= 0:
		return 0, notAbove
	}
	return days + more, nil
}

// durationShape is the form of a Go duration (1h30m, 1.5h).
var durationShape = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*$`)

// maxAgeDays is the longest age --older-than takes, in days.
const maxAgeDays = 100 * 365

// reclaim compacts the database at path after deleted runs (-1: none were
// to be deleted, compacting is the point) and says how large it was before
// and is now. A database that another process has open keeps its size,
// which is said, not an error: the deletion stands.
func (cf *commonFlags) reclaim(ctx context.Context, path string, before int64, deleted int, stdout, stderr io.Writer) error {
	stop := func() {}
	wait := compactWait
	if deleted == 0 {
		// Nothing deleted: compacting is worth a try, not a wait.
		wait = 0
	}
	did, err := store.Compact(ctx, path, store.CompactOptions{Wait: wait, Rewriting: func() {
		stop = compactProgress(path, before, stderr)
	}})
	stop()
	after := store.FileSize(path)
	shown := runtime.TerminalText(path)
	switch {
	case errors.Is(err, store.ErrInUse):
		if deleted == 0 {
			return nil
		}
		space := "the deleted runs' space"
		if deleted < 0 {
			space = "the free space in it"
		}
		fmt.Fprintln(stderr, "swarmdeck: "+cf.withFlags(fmt.Sprintf("%s is open in another process (a swarmdeck running, or another program such as sqlite3), so it keeps its size (%s): %s is reused by later runs; `swarmdeck prune --vacuum-only` gives it back to the file system when nothing else has it open",
			shown, fileSize(after), space)))
		return nil
	case errors.Is(err, store.ErrForeign):
		return usageErr(err) // --db names another program's file
	case err != nil && ctx.Err() != nil:
		// Stopped by a signal: the file is as it was, whole.
		msg := fmt.Errorf("%s was not compacted: stopped before the end; `swarmdeck prune --vacuum-only` compacts it", path)
		if deleted > 0 {
			msg = fmt.Errorf("the runs are deleted, but %w", msg)
		}
		return &exitError{runtime.ExitFailed, msg}
	case err != nil:
		msg := fmt.Errorf("%s could not be compacted (compacting needs about as much free disk space as the database takes): %w", path, err)
		if deleted > 0 {
			msg = fmt.Errorf("the runs are deleted, but %w", msg)
		}
		return &exitError{runtime.ExitFailed, msg}
	case !did && deleted <= 0:
		fmt.Fprintf(stdout, "%s: %s, with no free space to give back\n", shown, fileSize(after))
	default:
		fmt.Fprintf(stdout, "%s: %s before, %s now\n", shown, fileSize(before), fileSize(after))
	}
	return nil
}

// compactProgress tells on w, once compacting takes more than a moment,
// that it is under way, and then now and then how long it has taken.
// The returned function stops it.
func compactProgress(path string, size int64, w io.Writer) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		t := time.NewTimer(time.Second)
		defer t.Stop()
		for first := true; ; first = false {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if first {
				fmt.Fprintf(w, "swarmdeck: compacting %s (%s): the file is written anew without the free space, which takes a while in a large one\n",
					runtime.TerminalText(path), fileSize(size))
			} else {
				fmt.Fprintf(w, "swarmdeck: still compacting (%s)\n", time.Since(start).Round(time.Second))
			}
			t.Reset(5 * time.Second)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// fileSize is a size in bytes for a person: 812 KB, 66.2 MB.
func fileSize(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10) + " bytes"
	case n < 1000*1000:
		return fmt.Sprintf("%d KB", (n+500)/1000)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}
