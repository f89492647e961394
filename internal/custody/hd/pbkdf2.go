package hd

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding"
	"encoding/binary"
	"hash"
)

// HMAC-SHA512 and PBKDF2 (RFC 2104, RFC 8018) written so that nothing derived from the key stays
// in memory afterwards. crypto/hmac keeps the key XOR its inner and outer pads (for a BIP-39
// mnemonic of up to 128 bytes, the words XOR 0x36 and XOR 0x5c) and the hash states after them
// in an object it never clears; crypto/pbkdf2 also copies the password into a string-sized
// allocation. Here the pads and saved states live in buffers wiped before returning, and the
// hashes' own buffers are overwritten.

// hmacSHA512 sets out to HMAC-SHA512(key, data[0] ‖ data[1] ‖ …) for at most a block of data
// (seeds and derivation inputs are at most 64 bytes).
func hmacSHA512(out *[64]byte, key []byte, data ...[]byte) {
	var buf [2 * sha512.BlockSize]byte
	hmacOneShot(out[:], buf[:], sha512.BlockSize, func(dst, msg []byte) {
		sum := sha512.Sum512(msg)
		copy(dst, sum[:])
		clear(sum[:])
	}, key, data...)
}

// hmacSHA256 sets out to HMAC-SHA256(key, data[0] ‖ data[1] ‖ …) for at most 128 bytes of data
// (RFC 6979's inputs).
func hmacSHA256(out *[32]byte, key []byte, data ...[]byte) {
	var buf [sha256.BlockSize + 128]byte
	hmacOneShot(out[:], buf[:], sha256.BlockSize, func(dst, msg []byte) {
		sum := sha256.Sum256(msg)
		copy(dst, sum[:])
		clear(sum[:])
	}, key, data...)
}

// hmacOneShot computes an HMAC with sum, a one-shot hash of block size bs, into out: the key
// pads and the data are laid out in buf (zero, at least a block and the output long), which it
// clears, and each pass is hashed from it in one call.
func hmacOneShot(out, buf []byte, bs int, sum func(dst, msg []byte), key []byte, data ...[]byte) {
	defer clear(buf)
	if len(key) > bs {
		sum(buf[:len(out)], key)
	} else {
		copy(buf, key)
	}
	for i := range bs {
		buf[i] ^= 0x36
	}
	at := bs
	for _, d := range data {
		if at+len(d) > len(buf) {
			panic("hd: too much data for a one-shot HMAC")
		}
		at += copy(buf[at:], d)
	}
	sum(out, buf[:at])
	for i := range bs {
		buf[i] ^= 0x36 ^ 0x5c
	}
	copy(buf[bs:], out)
	sum(out, buf[:bs+len(out)])
}

// pbkdf2SHA512 fills out (at most 64 bytes: one block, as BIP-39 needs) with
// PBKDF2-HMAC-SHA512(password, salt, iter). The hash states after the inner and outer pads are
// computed once and restored each round, as crypto/hmac does, but into buffers wiped here.
func pbkdf2SHA512(password, salt []byte, iter int, out []byte) {
	if len(out) > sha512.Size {
		panic("hd: pbkdf2SHA512 derives one block")
	}
	var pad [sha512.BlockSize]byte
	defer clear(pad[:])
	if len(password) > len(pad) {
		sum := sha512.Sum512(password)
		copy(pad[:], sum[:])
		clear(sum[:])
	} else {
		copy(pad[:], password)
	}
	inner, outer := sha512.New(), sha512.New()
	defer scrub(inner)
	defer scrub(outer)
	for i := range pad {
		pad[i] ^= 0x36
	}
	inner.Write(pad[:])
	for i := range pad {
		pad[i] ^= 0x36 ^ 0x5c
	}
	outer.Write(pad[:])
	clear(pad[:])
	var states [2][256]byte
	defer clear(states[0][:])
	defer clear(states[1][:])
	innerState := marshal(inner, states[0][:0])
	outerState := marshal(outer, states[1][:0])

	var u, t, sum [sha512.Size]byte
	defer clear(u[:])
	defer clear(t[:])
	defer clear(sum[:])
	var block [4]byte
	binary.BigEndian.PutUint32(block[:], 1)
	// U1 = PRF(password, salt ‖ INT(1)); Un = PRF(password, Un-1); T = U1 ^ … ^ Uiter.
	prf := func(msg ...[]byte) {
		unmarshal(inner, innerState)
		for _, m := range msg {
			inner.Write(m)
		}
		inner.Sum(sum[:0])
		unmarshal(outer, outerState)
		outer.Write(sum[:])
		outer.Sum(u[:0])
	}
	prf(salt, block[:])
	t = u
	for n := 2; n <= iter; n++ {
		prf(u[:])
		for i := range t {
			t[i] ^= u[i]
		}
	}
	copy(out, t[:])
}

func marshal(h hash.Hash, into []byte) []byte {
	b, err := h.(encoding.BinaryAppender).AppendBinary(into)
	if err != nil || len(b) > cap(into) {
		panic("hd: the SHA-512 state does not fit its buffer")
	}
	return b
}

func unmarshal(h hash.Hash, state []byte) {
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		panic("hd: restoring a SHA-512 state: " + err.Error())
	}
}

// scrub overwrites what a SHA-512 hash holds: Reset puts back the initial state but leaves the
// partial block buffer as it was, which a short write then overwrites.
func scrub(h hash.Hash) {
	var zero [sha512.BlockSize - 1]byte
	h.Reset()
	h.Write(zero[:])
	h.Reset()
}

// HMACSHA256 sets out to HMAC-SHA256(key, data…) for at most 128 bytes of data, leaving nothing
// derived from key in memory (custody names its master key by it).
func HMACSHA256(out *[32]byte, key []byte, data ...[]byte) { hmacSHA256(out, key, data...) }
