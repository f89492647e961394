package custody

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
)

func hkdfKey(root []byte, info string) []byte {
	k, err := hkdf.Key(sha256.New, root, nil, info, 32)
	if err != nil {
		panic("custody: hkdf: " + err.Error()) // only fails for absurd lengths
	}
	return k
}

func hmacSHA256(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}
