//go:build !unix

package transfer

import "time"

// CPUTime is the user and system CPU time this process has used so far; ok is false where the platform does not
// say (here).
func CPUTime() (user, sys time.Duration, ok bool) { return 0, 0, false }
