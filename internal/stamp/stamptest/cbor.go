package stamptest

import (
	"encoding/binary"
	"fmt"
)

// KV is one map entry for EncodeCBOR.
type KV struct {
	K, V any
}

// Map is a CBOR map whose entries are encoded in the given order.
type Map []KV

// EncodeCBOR encodes int, int64, uint64, string, []byte, []any, Map, bool
// and nil as definite-length CBOR (RFC 8949). It is a minimal encoder for
// building WebAuthn fixtures and panics on other types.
func EncodeCBOR(v any) []byte {
	return appendCBOR(nil, v)
}

func appendHead(b []byte, major byte, arg uint64) []byte {
	m := major << 5
	switch {
	case arg < 24:
		return append(b, m|byte(arg))
	case arg <= 0xff:
		return append(b, m|24, byte(arg))
	case arg <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(arg))
	case arg <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(arg))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), arg)
}

func appendCBOR(b []byte, v any) []byte {
	switch x := v.(type) {
	case int:
		return appendCBOR(b, int64(x))
	case int64:
		if x >= 0 {
			return appendHead(b, 0, uint64(x))
		}
		return appendHead(b, 1, uint64(-1-x))
	case uint64:
		return appendHead(b, 0, x)
	case []byte:
		return append(appendHead(b, 2, uint64(len(x))), x...)
	case string:
		return append(appendHead(b, 3, uint64(len(x))), x...)
	case []any:
		b = appendHead(b, 4, uint64(len(x)))
		for _, e := range x {
			b = appendCBOR(b, e)
		}
		return b
	case Map:
		b = appendHead(b, 5, uint64(len(x)))
		for _, e := range x {
			b = appendCBOR(appendCBOR(b, e.K), e.V)
		}
		return b
	case bool:
		if x {
			return append(b, 0xf5)
		}
		return append(b, 0xf4)
	case nil:
		return append(b, 0xf6)
	}
	panic(fmt.Sprintf("stamptest.EncodeCBOR: unsupported type %T", v))
}
