//go:build !linux

package main

import (
	"errors"
	"os"
	"syscall"
)

// openUnnamed reports that this OS has no unnamed files: outputs use named temporary files instead.
func openUnnamed(string) (*os.File, error) { return nil, errors.ErrUnsupported }

func linkUnnamed(*os.File, string, bool) error { return errors.ErrUnsupported }

func fdPath(f *os.File) string { return f.Name() }

// processAlive reports whether a process with this id exists (on Unix, signal 0 finds out without sending one).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	// Any answer but "finished" counts as alive: a temporary file of a live run must never be removed.
	return !errors.Is(p.Signal(syscall.Signal(0)), os.ErrProcessDone)
}
