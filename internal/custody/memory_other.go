//go:build !linux

package custody

// secretPage returns heap bytes: locking and dump exclusion are implemented on Linux only.
func secretPage(n int) ([]byte, error) { return make([]byte, n), nil }

// HardenProcess does nothing outside Linux.
func HardenProcess() error { return nil }

// Dumpable reports true outside Linux (nothing was changed).
func Dumpable() (bool, error) { return true, nil }
