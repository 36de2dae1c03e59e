package alarm

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerFile is a non-blocking timerfd read through the runtime's poller, so
// a goroutine waiting on it holds no thread and its expiry wakes epoll_wait.
type timerFile struct {
	fd int
	f  *os.File
}

func openTimer() (timerFile, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return timerFile{}, err
	}
	return timerFile{fd: fd, f: os.NewFile(uintptr(fd), "alarm-timerfd")}, nil
}

// set makes the timer expire once, d from now, replacing an earlier setting.
func (t timerFile) set(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(d.Nanoseconds())}
	_ = unix.TimerfdSettime(t.fd, 0, &spec, nil) // cannot fail for a valid fd and a positive time
}

// wait returns once the timer has expired since the last wait.
func (t timerFile) wait() error {
	var b [8]byte
	_, err := t.f.Read(b[:])
	return err
}
