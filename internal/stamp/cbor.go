package stamp

import (
	"encoding/binary"
	"unicode/utf8"
)

// A small, strict CBOR (RFC 8949) decoder for WebAuthn attestation objects
// and COSE keys. It decodes unsigned and negative integers, byte and text
// strings, arrays and maps (definite and indefinite length), and the simple
// values false, true, null and undefined; floats are kept as raw bits. Tags
// are rejected (WebAuthn does not use them). Map keys must be integers or
// text and must not repeat. Nesting depth, items and map pairs are bounded,
// a head's declared length is checked against the data and the item budget
// before anything is allocated for it, and no allocation is larger than the
// remaining input, so hostile input costs no more than its size.

// Limits of the CBOR decoder (docs/limits.md §3).
const (
	// MaxCBORDepth bounds the nesting of arrays and maps. WebAuthn nests three
	// deep at most (attestation object, attStmt, x5c).
	MaxCBORDepth = 16
	// MaxCBORItems bounds the data items of one document (a map pair is two).
	// Real YubiKey registrations (testdata/real_yubico.json) hold 12 and 14; a
	// tpm or android-key statement adds a certificate chain and a few members,
	// tens of items. Every item costs a few dozen bytes of decoded value, so
	// 65,536 one-byte items cost over 100 times their size.
	MaxCBORItems = 1024
	// MaxCBORMapPairs bounds one map. Keys are checked for duplicates pairwise,
	// so maps stay small; the largest WebAuthn map (an RSA COSE key or a TPM
	// attStmt) has under 10 pairs.
	MaxCBORMapPairs = 256
)

// cborInt is a CBOR integer: the value is v when !neg, else -1-v.
type cborInt struct {
	neg bool
	v   uint64
}

// int64 returns the integer if it fits in an int64.
func (i cborInt) int64() (int64, bool) {
	if i.v > 1<<63-1 {
		return 0, false
	}
	if i.neg {
		return -1 - int64(i.v), true
	}
	return int64(i.v), true
}

type cborSimple uint8 // simple values other than false/true/null/undefined
type cborUndefined struct{}
type cborFloat uint64 // raw bits, width lost; never interpreted

type cborEntry struct {
	key any // cborInt or string
	val any
}

// cborMap keeps entries in input order.
type cborMap []cborEntry

// intKey and textKey look a key up.
func (m cborMap) intKey(k int64) (any, bool) {
	for _, e := range m {
		if ik, ok := e.key.(cborInt); ok {
			if v, ok := ik.int64(); ok && v == k {
				return e.val, true
			}
		}
	}
	return nil, false
}

func (m cborMap) textKey(k string) (any, bool) {
	for _, e := range m {
		if tk, ok := e.key.(string); ok && tk == k {
			return e.val, true
		}
	}
	return nil, false
}

type cborDecoder struct {
	b     []byte
	off   int
	items int
}

// cborDecodeFirst decodes one data item from the front of b and returns it
// with the number of bytes it used.
func cborDecodeFirst(b []byte) (any, int, error) {
	d := &cborDecoder{b: b}
	v, err := d.item(0)
	if err != nil {
		return nil, 0, err
	}
	return v, d.off, nil
}

// cborDecode decodes exactly one data item that fills b.
func cborDecode(b []byte) (any, error) {
	v, n, err := cborDecodeFirst(b)
	if err != nil {
		return nil, err
	}
	if n != len(b) {
		return nil, malformed("CBOR: %d trailing bytes", len(b)-n)
	}
	return v, nil
}

func (d *cborDecoder) errorf(format string, args ...any) error {
	return malformed("CBOR at offset %d: "+format, append([]any{d.off}, args...)...)
}

// head reads an initial byte and its argument. indefinite is true for
// additional information 31.
func (d *cborDecoder) head() (major byte, info byte, arg uint64, indefinite bool, err error) {
	if d.off >= len(d.b) {
		return 0, 0, 0, false, d.errorf("unexpected end of data")
	}
	ib := d.b[d.off]
	d.off++
	major, info = ib>>5, ib&0x1f
	switch {
	case info < 24:
		return major, info, uint64(info), false, nil
	case info <= 27:
		n := 1 << (info - 24)
		if len(d.b)-d.off < n {
			return 0, 0, 0, false, d.errorf("unexpected end of data")
		}
		p := d.b[d.off : d.off+n]
		d.off += n
		switch n {
		case 1:
			arg = uint64(p[0])
		case 2:
			arg = uint64(binary.BigEndian.Uint16(p))
		case 4:
			arg = uint64(binary.BigEndian.Uint32(p))
		default:
			arg = binary.BigEndian.Uint64(p)
		}
		return major, info, arg, false, nil
	case info == 31:
		if major == 0 || major == 1 || major == 6 {
			return 0, 0, 0, false, d.errorf("indefinite length not allowed for major type %d", major)
		}
		return major, info, 0, true, nil
	}
	return 0, 0, 0, false, d.errorf("reserved additional information %d", info)
}

// isBreak consumes a break code (0xff) if it is next.
func (d *cborDecoder) isBreak() (bool, error) {
	if d.off >= len(d.b) {
		return false, d.errorf("unexpected end of data (missing break)")
	}
	if d.b[d.off] == 0xff {
		d.off++
		return true, nil
	}
	return false, nil
}

func (d *cborDecoder) item(depth int) (any, error) {
	if depth > MaxCBORDepth {
		return nil, d.errorf("nesting deeper than %d", MaxCBORDepth)
	}
	d.items++
	if d.items > MaxCBORItems {
		return nil, d.errorf("more than %d items", MaxCBORItems)
	}
	start := d.off
	major, info, arg, indef, err := d.head()
	if err != nil {
		return nil, err
	}
	switch major {
	case 0:
		return cborInt{v: arg}, nil
	case 1:
		return cborInt{neg: true, v: arg}, nil
	case 2, 3:
		var s []byte
		if !indef {
			if s, err = d.take(arg); err != nil {
				return nil, err
			}
			s = append([]byte{}, s...)
		} else {
			s = []byte{}
			for {
				brk, err := d.isBreak()
				if err != nil {
					return nil, err
				}
				if brk {
					break
				}
				cm, _, carg, cindef, err := d.head()
				if err != nil {
					return nil, err
				}
				if cm != major || cindef {
					return nil, d.errorf("indefinite-length string chunk is not a definite string of the same type")
				}
				chunk, err := d.take(carg)
				if err != nil {
					return nil, err
				}
				if major == 3 && !utf8.Valid(chunk) {
					return nil, d.errorf("text chunk is not valid UTF-8")
				}
				s = append(s, chunk...)
			}
		}
		if major == 2 {
			return s, nil
		}
		if !utf8.Valid(s) {
			return nil, d.errorf("text string is not valid UTF-8")
		}
		return string(s), nil
	case 4:
		var arr []any
		if !indef {
			// Every element takes at least one byte and one item of the budget: both are
			// checked before the array is allocated, at its declared length.
			if arg > uint64(len(d.b)-d.off) {
				return nil, d.errorf("array of %d elements is longer than the data", arg)
			}
			if arg > uint64(MaxCBORItems-d.items) {
				return nil, d.errorf("array of %d elements: more than %d items", arg, MaxCBORItems)
			}
			arr = make([]any, 0, int(arg))
			for i := uint64(0); i < arg; i++ {
				v, err := d.item(depth + 1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			return arr, nil
		}
		arr = []any{}
		for {
			brk, err := d.isBreak()
			if err != nil {
				return nil, err
			}
			if brk {
				return arr, nil
			}
			v, err := d.item(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
	case 5:
		var m cborMap
		if !indef {
			if arg > MaxCBORMapPairs {
				return nil, d.errorf("map has more than %d pairs", MaxCBORMapPairs)
			}
			if arg > uint64(len(d.b)-d.off)/2 {
				return nil, d.errorf("map of %d pairs is longer than the data", arg)
			}
			if 2*arg > uint64(MaxCBORItems-d.items) {
				return nil, d.errorf("map of %d pairs: more than %d items", arg, MaxCBORItems)
			}
			m = make(cborMap, 0, int(arg))
		}
		for i := uint64(0); indef || i < arg; i++ {
			if indef {
				brk, err := d.isBreak()
				if err != nil {
					return nil, err
				}
				if brk {
					break
				}
			}
			k, err := d.item(depth + 1)
			if err != nil {
				return nil, err
			}
			switch k.(type) {
			case cborInt, string:
			default:
				return nil, d.errorf("map key is not an integer or text string")
			}
			for _, e := range m {
				if e.key == k {
					return nil, d.errorf("duplicate map key")
				}
			}
			v, err := d.item(depth + 1)
			if err != nil {
				return nil, err
			}
			if len(m) >= MaxCBORMapPairs {
				return nil, d.errorf("map has more than %d pairs", MaxCBORMapPairs)
			}
			m = append(m, cborEntry{key: k, val: v})
		}
		if m == nil {
			m = cborMap{}
		}
		return m, nil
	case 6:
		d.off = start
		return nil, d.errorf("tags are not supported")
	default: // 7
		if indef {
			d.off = start
			return nil, d.errorf("unexpected break")
		}
		switch {
		case info < 24 || info == 24:
			switch arg {
			case 20:
				return false, nil
			case 21:
				return true, nil
			case 22:
				return nil, nil
			case 23:
				return cborUndefined{}, nil
			}
			if info == 24 && arg < 32 {
				return nil, d.errorf("non-canonical simple value %d", arg)
			}
			return cborSimple(arg), nil
		default: // 25, 26, 27: half, single, double precision float
			return cborFloat(arg), nil
		}
	}
}

func (d *cborDecoder) take(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)-d.off) {
		return nil, d.errorf("string of %d bytes is longer than the data", n)
	}
	s := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	return s, nil
}
