//go:build !unix

package server

import "os"

// LockFile is the data directory's lock file name (not used on this platform).
const LockFile = "latchkey.lock"

// LockDataDir takes no lock where flock does not exist: two serve processes on one SQLite data
// directory are then not prevented (SQLite's own locking still keeps the file consistent).
func LockDataDir(dir string) (*os.File, error) { return nil, nil }
