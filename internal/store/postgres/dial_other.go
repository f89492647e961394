//go:build !linux

package postgres

import "time"

// setUserTimeout does nothing where TCP_USER_TIMEOUT does not exist; keepalive and
// Options.StallTimeout still bound the waits.
func setUserTimeout(uintptr, time.Duration) error { return nil }

// peekIdle cannot look without waiting here: the pool's pings find dead connections instead.
func peekIdle(uintptr) bool { return true }
