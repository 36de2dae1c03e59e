package runlock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The lock is held per open file, as flock locks are: a second Acquire in
// this process stands for a second process.
func TestSecondHolderIsRefusedUntilRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db.locks")
	a, err := Acquire(dir, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir, "r-1")
	var h *HeldError
	if !IsHeld(err) {
		t.Fatalf("second Acquire = %v, want a HeldError", err)
	}
	h = err.(*HeldError)
	if h.PID != os.Getpid() || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), "swarmdeck view r-1") {
		t.Errorf("error %q (pid %d): want the holder's pid and what to do", err, h.PID)
	}
	other, err := Acquire(dir, "r-2")
	if err != nil {
		t.Fatalf("another run's lock: %v", err)
	}
	other.Release()
	a.Release()
	a.Release() // twice is harmless
	if _, err := os.Stat(filepath.Join(dir, "r-1.lock")); !os.IsNotExist(err) {
		t.Errorf("lock file left after release: %v", err)
	}
	b, err := Acquire(dir, "r-1")
	if err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
	b.Release()
}

// A run held by a delete says so to whoever wants it next (a resume, a
// second delete), with the deleting process's pid.
func TestHeldByADelete(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db.locks")
	d, err := AcquireToDelete(dir, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	for _, take := range []func(string, string) (*Lock, error){Acquire, AcquireToDelete} {
		_, err := take(dir, "r-1")
		var h *HeldError
		if !errors.As(err, &h) || !h.Deleting || h.PID != os.Getpid() {
			t.Fatalf("taking a run being deleted: %#v (%v)", h, err)
		}
		if want := "run r-1 is being deleted by another swarmdeck process (pid " + strconv.Itoa(os.Getpid()) + ")"; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
	// A lock held to run the run is not one to delete it.
	r, err := Acquire(dir, "r-2")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	var h *HeldError
	if _, err := AcquireToDelete(dir, "r-2"); !errors.As(err, &h) || h.Deleting {
		t.Errorf("deleting a run being run: %#v (%v)", h, err)
	}
}

func TestBadRunIDs(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"", "../r-1", "r/1", `r\1`} {
		if _, err := Acquire(dir, id); err == nil || IsHeld(err) {
			t.Errorf("Acquire(%q) = %v, want a bad id error", id, err)
		}
	}
}

// A process that dies holding the lock leaves it free: the kernel drops
// flock locks with the last open file.
func TestLockOfADeadProcessIsFree(t *testing.T) {
	holdAsChild("r-1")
	dir := filepath.Join(t.TempDir(), "db.locks")
	cmd := startHolder(t, "TestLockOfADeadProcessIsFree", dir)
	if held, known := Held(dir, "r-1"); !held || !known {
		cmd.Process.Kill()
		t.Fatalf("Held while the child holds it = %v, %v", held, known)
	}
	_, err := Acquire(dir, "r-1")
	if h, ok := err.(*HeldError); !ok || h.PID != cmd.Process.Pid {
		cmd.Process.Kill()
		t.Fatalf("Acquire while the child holds it = %v, want held by pid %d", err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// Killed, it left its lock file behind, but not the lock.
	if held, known := Held(dir, "r-1"); held || !known {
		t.Fatalf("Held after the holder died = %v, %v", held, known)
	}
	if held, known := Held(dir, "r-never"); held || !known {
		t.Fatalf("Held of a run never locked = %v, %v", held, known)
	}
	l, err := Acquire(dir, "r-1")
	if err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
	l.Release()
}

// The directory of lock files is there while a run is held and goes with
// the last lock, so nothing is left beside the database.
func TestDirectoryGoesWithTheLastLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db.locks")
	a, err := Acquire(dir, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(dir, "r-2")
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	if _, err := os.Stat(filepath.Join(dir, "r-2.lock")); err != nil {
		t.Fatalf("releasing r-1 touched r-2's lock: %v", err)
	}
	b.Release()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("lock directory left after the last release: %v", err)
	}
}

// Runs locked and released at once from many goroutines (standing for
// processes) never fail because another removed the directory under them.
func TestConcurrentAcquireAndRelease(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db.locks")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				l, err := Acquire(dir, "r-"+strconv.Itoa(g)+"-"+strconv.Itoa(i))
				if err != nil {
					errs <- err
					return
				}
				l.Release()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("lock directory left after every release: %v", err)
	}
}

// A database reached through a symbolic link has its locks beside the
// file itself: kept beside the link, they let a second process resume a
// run that another ran through the file's own name.
func TestLinkToTheDatabaseSharesItsLocks(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "swarmdeck.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link.db")
	if err := os.Symlink(db, link); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	if Dir(link) != Dir(db) {
		t.Fatalf("Dir(%s) = %s, Dir(%s) = %s: want one", link, Dir(link), db, Dir(db))
	}
	l, err := Acquire(Dir(db), "r-1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if held, known := Held(Dir(link), "r-1"); !held || !known {
		t.Errorf("through the link the run is held=%v known=%v, want held", held, known)
	}
	if fresh := filepath.Join(dir, "new.db"); Dir(fresh) != fresh+".locks" {
		t.Errorf("a database not made yet: Dir = %s", Dir(fresh))
	}
}

// holdAsChild, in the process startHolder starts, takes the lock of runID
// in the directory it was given, says so and holds it until killed; in
// the test's own process it does nothing.
func holdAsChild(runID string) {
	dir := os.Getenv("RUNLOCK_CHILD")
	if dir == "" {
		return
	}
	if _, err := Acquire(dir, runID); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("held\n")
	os.Stdout.Sync()
	select {} // until killed
}

// startHolder runs the test named test again in a process of its own,
// where holdAsChild takes a lock in dir, and returns once it holds it.
func startHolder(t *testing.T, test, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), "RUNLOCK_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		cmd.Process.Kill()
		t.Fatalf("child did not take the lock: %q %v", buf, err)
	}
	return cmd
}
