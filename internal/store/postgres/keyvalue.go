package postgres

import (
	"encoding/base64"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/store"
)

// PostgreSQL's text type cannot hold the NUL character, and a key value may contain one (an
// OAuth identity's key is issuer, subject and audience joined by NUL). Such a value, and one
// that happens to start with the marker, is stored as the marker followed by its base64; every
// other value is stored as it is, the same bytes SQLite stores. The mapping is one-to-one, so
// unique keys and look-ups behave as on SQLite.
const encodedMarker = "\x01b64:"

func encodeKeyValue(v string) string {
	if !strings.ContainsRune(v, 0) && !strings.HasPrefix(v, encodedMarker) {
		return v
	}
	return encodedMarker + base64.StdEncoding.EncodeToString([]byte(v))
}

func decodeKeyValue(v string) string {
	rest, ok := strings.CutPrefix(v, encodedMarker)
	if !ok {
		return v
	}
	b, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return v // not written by encodeKeyValue
	}
	return string(b)
}

// decodeKeys turns exported keys back into the values that were put, in (Name, Value) byte
// order as store.Exporter promises (an encoded value sorted by its stored form).
func decodeKeys(keys []store.Key) []store.Key {
	changed := false
	for i := range keys {
		if d := decodeKeyValue(keys[i].Value); d != keys[i].Value {
			keys[i].Value, changed = d, true
		}
	}
	if changed {
		slices.SortFunc(keys, func(a, b store.Key) int {
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return strings.Compare(a.Value, b.Value)
		})
	}
	return keys
}
