//go:build linux

package custody

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// secretPage returns n bytes (n at most a page) in an anonymous mapping of their own, outside
// Go's heap: locked in RAM (mlock: never swapped) and excluded from core dumps (MADV_DONTDUMP,
// which gdb's gcore honours too). The garbage collector never moves or copies it. When the
// mapping cannot be made, the bytes come from the heap and the error says why (the caller
// logs it once); when only mlock fails (RLIMIT_MEMLOCK), the page is still excluded from dumps.
func secretPage(n int) ([]byte, error) {
	size := os.Getpagesize()
	if n > size {
		return make([]byte, n), fmt.Errorf("custody: %d bytes exceed a page", n)
	}
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return make([]byte, n), fmt.Errorf("custody: mapping a page for the master key: %w", err)
	}
	if err := unix.Madvise(b, unix.MADV_DONTDUMP); err != nil {
		return b[:n], fmt.Errorf("custody: excluding the master key's page from core dumps: %w", err)
	}
	if err := unix.Mlock(b); err != nil {
		return b[:n], fmt.Errorf(
			"custody: locking the master key's page in memory (raise RLIMIT_MEMLOCK, or LimitMEMLOCK= in systemd): %w",
			err,
		)
	}
	return b[:n], nil
}

// HardenProcess makes the process non-dumpable (prctl PR_SET_DUMPABLE 0): the kernel writes no
// core dump of it, and users other than root cannot ptrace it or read its /proc/<pid>/mem.
// serve calls it in production (not with --dev, where a developer may want a core dump).
func HardenProcess() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("custody: prctl(PR_SET_DUMPABLE, 0): %w", err)
	}
	return nil
}

// Dumpable reports the process's PR_GET_DUMPABLE flag (tests).
func Dumpable() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return v != 0, err
}
