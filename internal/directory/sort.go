package directory

import (
	"slices"
	"strings"
	"time"
)

func sortByCreated[T any](xs []*T, key func(*T) (time.Time, string)) {
	slices.SortFunc(xs, func(a, b *T) int {
		ta, ia := key(a)
		tb, ib := key(b)
		if c := ta.Compare(tb); c != 0 {
			return c
		}
		return strings.Compare(ia, ib)
	})
}

func sortStrings(xs []string) { slices.Sort(xs) }
