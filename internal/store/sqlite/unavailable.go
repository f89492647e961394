package sqlite

import (
	"errors"

	"github.com/latchkey/latchkey/internal/store"
)

// SQLite's primary result codes that are failures of the file or of the machine, not of the
// statement: busy or locked past the busy timeout, out of memory, read-only, an I/O error, the
// disk full, the file not to be opened, a locking protocol error.
var unavailableCodes = map[int]bool{5: true, 6: true, 7: true, 8: true, 10: true, 13: true, 14: true, 15: true}

// mark makes such a failure store.ErrUnavailable (a 503, never a 500); anything else is
// returned as it is.
func mark(err error) error {
	var se interface{ Code() int }
	if err != nil && errors.As(err, &se) && unavailableCodes[se.Code()&0xff] {
		return store.Unavailable(err)
	}
	return err
}
