package hd

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"testing"
)

// This package's HMAC and PBKDF2 (which wipe their state) must equal the standard library's, for
// keys shorter and longer than a block.
func TestHMACAndPBKDF2MatchStdlib(t *testing.T) {
	for _, n := range []int{0, 1, 32, 64, 127, 128, 129, 200, 300} {
		key := bytes.Repeat([]byte{byte(n + 1)}, n)
		data := bytes.Repeat([]byte{0xab}, n%65)
		m := hmac.New(sha512.New, key)
		m.Write(data)
		m.Write(data)
		var got [64]byte
		hmacSHA512(&got, key, data, data)
		if !bytes.Equal(got[:], m.Sum(nil)) {
			t.Errorf("HMAC-SHA512 with a %d-byte key differs", n)
		}
		if n <= sha256.BlockSize {
			m := hmac.New(sha256.New, key)
			m.Write(data)
			var got [32]byte
			hmacSHA256(&got, key, data)
			if !bytes.Equal(got[:], m.Sum(nil)) {
				t.Errorf("HMAC-SHA256 with a %d-byte key differs", n)
			}
		}
		for _, size := range []int{32, 64} {
			want, err := pbkdf2.Key(sha512.New, string(key), data, 7, size)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]byte, size)
			pbkdf2SHA512(key, data, 7, out)
			if !bytes.Equal(out, want) {
				t.Errorf("PBKDF2 with a %d-byte password, %d bytes out, differs", n, size)
			}
		}
	}
}
