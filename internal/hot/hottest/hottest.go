package hottest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/latchkey/latchkey/internal/hot"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// SQLite opens a new SQLite store in t's temporary directory behind hot.Wrap for kinds, watched
// as a server watches it and closed when t ends, and returns it with its Versions.
func SQLite(t testing.TB, kinds ...string) (*hot.Store, *hot.Versions) {
	t.Helper()
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hot.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := hot.NewVersions()
	st := hot.Wrap(raw, v, kinds...)
	st.Watch()
	t.Cleanup(func() { st.Close() })
	return st, v
}
