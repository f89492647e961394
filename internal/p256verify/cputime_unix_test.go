//go:build unix

package p256verify

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used. On a machine shared with other work, wall
// time per operation says more about the neighbours than about the code; CPU time does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
