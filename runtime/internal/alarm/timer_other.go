//go:build !linux

package alarm

import (
	"errors"
	"time"
)

type timerFile struct{}

func openTimer() (timerFile, error) { return timerFile{}, errors.New("no timerfd") }
func (timerFile) set(time.Duration) {}
func (timerFile) wait() error       { return errors.New("no timerfd") }
