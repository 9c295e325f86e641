//go:build unix

package transfer

import (
	"syscall"
	"time"
)

// CPUTime is the user and system CPU time this process has used so far (getrusage RUSAGE_SELF); ok is false where
// the platform does not say.
func CPUTime() (user, sys time.Duration, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), true
}
