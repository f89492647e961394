// Package id makes the identifiers of Latchkey's records: random (version 4) UUIDs, as Turnkey
// uses for organizations, users, keys and wallets, and time-ordered (version 7) UUIDs for
// activities, which clients read as opaque UUIDs like the others.
package id

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// New returns a fresh random UUID in canonical lowercase form.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	return format(&b)
}

// NewOrdered returns a fresh time-ordered (version 7, RFC 9562) UUID: its first 48 bits are
// the Unix time in milliseconds at now, the rest random. Ids made later sort after it (to the
// millisecond), so a store indexing them appends at the end of the index instead of writing a
// random page of it: activities are made at the rate requests come, and their ids are indexed.
func NewOrdered(now time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[6:])
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	b[6] = b[6]&0x0f | 0x70
	return format(&b)
}

// format writes b as a canonical lowercase UUID, with the RFC 9562 variant bits set.
func format(b *[16]byte) string {
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:36], b[10:16])
	return string(out[:])
}

// Valid reports whether s is a canonical lowercase UUID.
func Valid(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}
