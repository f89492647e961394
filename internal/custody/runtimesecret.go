//go:build goexperiment.runtimesecret

package custody

import "runtime/secret"

// inSecret runs f under runtime/secret (a Go 1.26 experiment, built with
// GOEXPERIMENT=runtimesecret): when f returns, the stack and registers it used are erased, and
// the heap allocations it made are erased once the garbage collector finds them unreachable —
// which reaches copies this package cannot wipe itself (crypto/ecdh and crypto/ecdsa's P-256 key
// values, math/big's buffers, the stack copies of hash states).
func inSecret(f func()) { secret.Do(f) }
