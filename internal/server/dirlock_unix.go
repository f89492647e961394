//go:build unix

package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// LockFile is the data directory's lock: `serve` holds an exclusive flock on it for its life
// and writes its PID into it.
const LockFile = "latchkey.lock"

// LockDataDir takes the data directory's exclusive lock, refusing, with the other process's
// PID, when another serve holds it. The lock is released when the returned file is closed (or
// the process ends, however it ends).
func LockDataDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data directory: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the data directory's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		holder := strings.TrimSpace(string(b))
		if _, perr := strconv.Atoi(holder); perr != nil {
			holder = "unknown"
		}
		return nil, fmt.Errorf("data directory %s is in use by another latchkey serve (pid %s): "+
			"stop it first, or give this one another --data-dir", dir, holder)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
