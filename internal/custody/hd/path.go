package hd

import (
	"errors"
	"strconv"
	"strings"
)

// HardenedOffset is added to an index to make a hardened child (BIP-32: i ≥ 2^31).
const HardenedOffset uint32 = 0x80000000

// MaxPathDepth bounds the number of segments a path may have. BIP-32 allows 255; no chain
// Latchkey serves uses more than six, and each segment costs a scalar multiplication.
const MaxPathDepth = 32

// ErrInvalidPath is wrapped by every path parsing error; its text is the documented Turnkey
// error fragment "invalid path".
var ErrInvalidPath = errors.New("invalid path")

// Path is a parsed derivation path: one child index per segment, hardened ones with
// HardenedOffset added. The empty Path is the master key "m".
type Path []uint32

// ParsePath parses "m/44'/60'/0'/0/0". Hardened segments end in ', h or H. Indexes are
// decimal, below 2^31, without sign or spaces. "m" alone is the master key.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return nil, pathError("empty path")
	}
	if len(s) > 12*MaxPathDepth+1 {
		return nil, pathError("path too long")
	}
	segs := strings.Split(s, "/")
	if segs[0] != "m" {
		return nil, pathError(`path must start with "m"`)
	}
	segs = segs[1:]
	if len(segs) > MaxPathDepth {
		return nil, pathError("path deeper than " + strconv.Itoa(MaxPathDepth) + " segments")
	}
	p := make(Path, 0, len(segs))
	for n, seg := range segs {
		var hardened bool
		if l := len(seg); l > 0 && (seg[l-1] == '\'' || seg[l-1] == 'h' || seg[l-1] == 'H') {
			hardened = true
			seg = seg[:l-1]
		}
		if seg == "" {
			return nil, pathError("segment " + strconv.Itoa(n+1) + " is empty")
		}
		for _, c := range []byte(seg) {
			if c < '0' || c > '9' {
				return nil, pathError("segment " + strconv.Itoa(n+1) + " is not a decimal index")
			}
		}
		v, err := strconv.ParseUint(seg, 10, 32)
		if err != nil || uint32(v) >= HardenedOffset {
			return nil, pathError("segment " + strconv.Itoa(n+1) + " is out of range (must be below 2^31)")
		}
		idx := uint32(v)
		if hardened {
			idx += HardenedOffset
		}
		p = append(p, idx)
	}
	return p, nil
}

func pathError(detail string) error {
	return &pathErr{detail: detail}
}

type pathErr struct{ detail string }

func (e *pathErr) Error() string { return "invalid path: " + e.detail }
func (e *pathErr) Unwrap() error { return ErrInvalidPath }

// String renders the path with ' as the hardened marker.
func (p Path) String() string {
	var b strings.Builder
	b.WriteString("m")
	for _, i := range p {
		b.WriteByte('/')
		if i >= HardenedOffset {
			b.WriteString(strconv.FormatUint(uint64(i-HardenedOffset), 10))
			b.WriteByte('\'')
		} else {
			b.WriteString(strconv.FormatUint(uint64(i), 10))
		}
	}
	return b.String()
}
