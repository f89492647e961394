package tron

import (
	"errors"
	"fmt"
	"slices"
)

// Protobuf wire types.
const (
	wireVarint = 0
	wireI64    = 1
	wireBytes  = 2
	wireI32    = 5
)

// field is one decoded protobuf field: its number, wire type, and either its varint value
// or its length-delimited bytes (fixed-width values are skipped by the callers here).
type field struct {
	num   uint64
	wire  int
	value uint64
	bytes []byte
}

var errTruncated = errors.New("truncated protobuf")

func readVarint(b []byte) (uint64, int, error) {
	var x uint64
	for i := 0; i < len(b) && i < 10; i++ {
		c := b[i]
		if i == 9 && c > 1 {
			return 0, 0, errors.New("varint overflows 64 bits")
		}
		x |= uint64(c&0x7f) << (7 * uint(i))
		if c < 0x80 {
			return x, i + 1, nil
		}
	}
	return 0, 0, errTruncated
}

// eachField calls fn with each field of a protobuf message, in order, without collecting them:
// a message of many small unknown fields costs no memory. Groups (wire types 3 and 4), which no
// Tron message uses, are rejected.
func eachField(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		tag, n, err := readVarint(b)
		if err != nil {
			return err
		}
		b = b[n:]
		f := field{num: tag >> 3, wire: int(tag & 7)}
		if f.num == 0 {
			return errors.New("field number 0")
		}
		switch f.wire {
		case wireVarint:
			f.value, n, err = readVarint(b)
			if err != nil {
				return err
			}
			b = b[n:]
		case wireI64:
			if len(b) < 8 {
				return errTruncated
			}
			b = b[8:]
		case wireI32:
			if len(b) < 4 {
				return errTruncated
			}
			b = b[4:]
		case wireBytes:
			l, n, err := readVarint(b)
			if err != nil {
				return err
			}
			b = b[n:]
			if l > uint64(len(b)) {
				return errTruncated
			}
			f.bytes = b[:l]
			b = b[l:]
		default:
			return fmt.Errorf("unsupported wire type %d (field %d)", f.wire, f.num)
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// message reads the fields of one message against a schema of expected wire types; unknown
// field numbers are skipped (as protobuf does), a known field with the wrong wire type or a
// repeated singular field is an error (so that what the policy sees is what the node reads).
type message struct {
	name     string
	varints  map[uint64]uint64
	bytes    map[uint64][]byte
	repeated map[uint64][][]byte
}

type schema struct {
	varint   []uint64
	bytes    []uint64
	repeated []uint64 // repeated length-delimited fields
}

func decode(name string, b []byte, s schema) (*message, error) {
	kind := func(num uint64) int {
		switch {
		case slices.Contains(s.varint, num):
			return 1
		case slices.Contains(s.bytes, num):
			return 2
		case slices.Contains(s.repeated, num):
			return 3
		}
		return 0
	}
	m := &message{name: name, varints: map[uint64]uint64{}, bytes: map[uint64][]byte{}, repeated: map[uint64][][]byte{}}
	err := eachField(b, func(f field) error {
		k := kind(f.num)
		switch {
		case k == 0:
			return nil
		case k == 1 && f.wire != wireVarint, k >= 2 && f.wire != wireBytes:
			return fmt.Errorf("field %d has wire type %d", f.num, f.wire)
		}
		switch k {
		case 1:
			if _, dup := m.varints[f.num]; dup {
				return fmt.Errorf("field %d appears twice", f.num)
			}
			m.varints[f.num] = f.value
		case 2:
			if _, dup := m.bytes[f.num]; dup {
				return fmt.Errorf("field %d appears twice", f.num)
			}
			m.bytes[f.num] = f.bytes
		case 3:
			m.repeated[f.num] = append(m.repeated[f.num], f.bytes)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

func appendVarint(b []byte, x uint64) []byte {
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}

func appendBytesField(b []byte, num uint64, v []byte) []byte {
	b = appendVarint(b, num<<3|wireBytes)
	b = appendVarint(b, uint64(len(v)))
	return append(b, v...)
}
