package ethereum

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// intParser reads the integers of EIP-712 values into n, reusing n and its scratch integers:
// reading one allocates nothing once they have grown to 256 bits.
//
// It accepts what the first implementation accepted through big.Int.SetString and
// big.ParseFloat, which allocate on every call (a reader, the mantissa, and powers of five for
// an exponent): a JSON number as written, or a string's trimmed content, optionally negative
// (a "-" before the body, and another sign within it, as those functions read it):
//   - 0x or 0X and up to 64 hex digits (a sign may follow the prefix: "0x-1" is -1);
//   - up to 80 decimal digits, with a sign or not;
//   - up to 100 characters of a decimal number with a fraction or an exponent (e, E, or p and
//     P for a power of two), when its value is an exact integer below 2^256 ("1e+21",
//     "1.5e3"). big.ParseFloat rounds to 1024 bits, which changes no such value; only where
//     its binary exponent underflows (an exponent below about -646,000,000) did it round a
//     number to 0 and accept it: those are refused (docs/limits.md §4.1).
type intParser struct {
	n, t, u big.Int
	hexb    [32]byte
}

// maxExactDecimals bounds the decimal exponents read exactly; beyond it a value with nonzero
// digits is either at least 10^78 (more than 256 bits) or not an integer.
const maxExactDecimals = 100

// parse reads s into p.n.
func (p *intParser) parse(s []byte) bool {
	neg := len(s) > 0 && s[0] == '-'
	body := s
	if neg {
		body = s[1:]
	}
	ok := false
	switch {
	case hexPrefixed(body):
		if len(body) > 2 && len(body) <= 18 && hexDigits(body[2:]) {
			p.n.SetUint64(hexUint64(body[2:]))
			ok = true
		} else if len(body) > 2 && len(body) <= 66 {
			ok = p.setSigned(body[2:], 16)
		}
	case len(body) > 0 && len(body) <= 19 && allDigits(body):
		p.n.SetUint64(decUint64(body))
		ok = true
	case bytes.ContainsAny(body, ".eE"):
		ok = len(body) <= 100 && p.setFloat(body)
	default:
		ok = len(body) > 0 && len(body) <= 80 && p.setSigned(body, 10)
	}
	if ok && neg {
		p.n.Neg(&p.n)
	}
	return ok
}

func hexUint64(s []byte) uint64 {
	var u uint64
	for _, c := range s {
		d, _ := fromHexChar(c)
		u = u<<4 | uint64(d)
	}
	return u
}

func decUint64(s []byte) uint64 {
	var u uint64
	for _, c := range s {
		u = u*10 + uint64(c-'0')
	}
	return u
}

// setSigned is big.Int.SetString(s, base) for base 16 or 10: a sign, then digits, nothing
// else.
func (p *intParser) setSigned(s []byte, base int) bool {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	switch {
	case len(s) == 0:
		return false
	case base == 16:
		if len(s) > 2*len(p.hexb) || !decodeHex(p.hexb[:(len(s)+1)/2], s) {
			return false
		}
		p.n.SetBytes(p.hexb[:(len(s)+1)/2])
	default:
		if !allDigits(s) {
			return false
		}
		p.setDecimal(s, 0)
	}
	if neg {
		p.n.Neg(&p.n)
	}
	return true
}

var pow10 = [20]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
	1e15, 1e16, 1e17, 1e18, 1e19}

// setDecimal sets n to the decimal digits (and '.', which it skips) of s followed by zeros
// more zeros, 19 digits at a time.
func (p *intParser) setDecimal(s []byte, zeros int) {
	p.n.SetUint64(0)
	var chunk uint64
	k := 0
	for _, c := range s {
		if c == '.' {
			continue
		}
		chunk = chunk*10 + uint64(c-'0')
		if k++; k == 19 {
			p.mulAdd(pow10[19], chunk)
			chunk, k = 0, 0
		}
	}
	p.mulAdd(pow10[k], chunk)
	for ; zeros > 0; zeros -= 19 {
		p.mulAdd(pow10[min(zeros, 19)], 0)
	}
}

// mulAdd sets n = n×m + a (through t and u: a receiver that is also an operand would make
// big.Int allocate).
func (p *intParser) mulAdd(m, a uint64) {
	p.u.SetUint64(m)
	p.t.Mul(&p.n, &p.u)
	p.u.SetUint64(a)
	p.n.Add(&p.t, &p.u)
}

// setFloat reads what big.ParseFloat(s, 10, 1024, big.ToNearestEven) reads: a sign, a
// mantissa of decimal digits with at most one '.', and an exponent (e or E: a power of ten;
// p or P: of two) of a sign and decimal digits that fit in an int64. It sets n when the
// value is an integer below 2^256 (0 when the mantissa's digits are all 0, whatever the
// exponent).
func (p *intParser) setFloat(s []byte) bool {
	i, neg := 0, false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg, i = s[0] == '-', 1
	}
	start, dot, digits, nonzero := i, -1, 0, false
	for ; i < len(s); i++ {
		c := s[i]
		if c == '.' && dot < 0 {
			dot = i
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		digits++
		nonzero = nonzero || c != '0'
	}
	if digits == 0 {
		return false
	}
	mant := s[start:i]
	frac := 0
	if dot >= 0 {
		frac = i - dot - 1
	}
	var exp int64
	binary := false
	if i < len(s) {
		switch s[i] {
		case 'e', 'E':
		case 'p', 'P':
			binary = true
		default:
			return false
		}
		var ok bool
		if exp, ok = parseExponent(s[i+1:]); !ok {
			return false
		}
	}
	if !nonzero {
		p.n.SetUint64(0)
		return true
	}
	// big.Float's scan: the mantissa's bits, less the fraction's digits (a power of ten
	// split into powers of two and five), plus the exponent must fit in its exponent range.
	p.setDecimal(mant, 0)
	exp2 := int64(p.n.BitLen())
	exp2 -= int64(frac)
	exp2 += exp
	if exp2 < big.MinExp || exp2 > big.MaxExp {
		return false
	}
	exp5 := -int64(frac)
	if !binary {
		exp5 += exp
	}
	if !p.setExact(mant, frac, exp, exp5, binary) || p.n.BitLen() > 256 {
		return false
	}
	if neg {
		p.n.Neg(&p.n)
	}
	return true
}

// setExact sets n to the value of the nonzero mantissa mant (frac digits after its point)
// times 10^exp (2^exp if binary), if that is an integer. exp5 is the power of five in it.
func (p *intParser) setExact(mant []byte, frac int, exp, exp5 int64, binary bool) bool {
	switch {
	case exp5 == 0: // n × 2^(exp - frac): the mantissa is an integer, shifted
		t := exp - int64(frac)
		if t >= 0 {
			if int64(p.n.BitLen())+t > 256 {
				return false
			}
			p.n.Lsh(&p.n, uint(t))
			return true
		}
		if -t > int64(p.n.TrailingZeroBits()) {
			return false
		}
		p.n.Rsh(&p.n, uint(-t))
		return true
	case exp5 > 0: // decimal: mantissa × 10^exp5, an integer
		if exp5 >= 78 {
			return false // at least 10^78 > 2^256
		}
		p.setDecimal(mant, int(exp5))
		return true
	case !binary: // mantissa / 10^-exp5: an integer if its last -exp5 digits are zeros
		k := -exp5
		if k > maxExactDecimals {
			return false
		}
		digits := mant
		for j := len(digits) - 1; k > 0; j-- {
			if j < 0 {
				return false
			}
			switch digits[j] {
			case '.':
				continue
			case '0':
				k--
				digits = digits[:j]
			default:
				return false
			}
		}
		p.setDecimal(digits, 0)
		return true
	}
	// binary exponent and a fraction: mantissa × 2^exp / 10^frac.
	if exp > 2048 || exp < -2048 {
		return false // at least 2^2048/10^100 > 2^256, or below 1 (and not 0)
	}
	p.u.SetUint64(1)
	for k := frac; k > 0; k -= 19 {
		p.t.SetUint64(pow10[min(k, 19)])
		p.u.Mul(&p.u, &p.t)
	}
	if exp >= 0 {
		p.n.Lsh(&p.n, uint(exp))
	} else {
		p.u.Lsh(&p.u, uint(-exp))
	}
	p.n.QuoRem(&p.n, &p.u, &p.t)
	return p.t.Sign() == 0
}

// parseExponent is big.Float's exponent: a sign, then decimal digits, that strconv.ParseInt
// reads into an int64; nothing may follow.
func parseExponent(s []byte) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if len(s) == 0 || !allDigits(s) {
		return 0, false
	}
	var u uint64
	for _, c := range s {
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // -(1<<63) wraps to itself, as it should
	}
	if u == 1<<63 {
		return 0, false
	}
	return int64(u), true
}

// intFits reports whether x is an intN (signed) or uintN.
func intFits(x *big.Int, bits int, signed bool) bool {
	if !signed {
		return x.Sign() >= 0 && x.BitLen() <= bits
	}
	bl := x.BitLen() // of |x|
	if x.Sign() >= 0 {
		return bl <= bits-1
	}
	return bl <= bits-1 || (bl == bits && x.TrailingZeroBits() == uint(bits-1))
}

// parseInteger reads a JSON number, a decimal string or a 0x-hex string (optionally negative)
// decoded into Go values (the policy view and EIP-7702 authorizations).
func parseInteger(v any) (*big.Int, error) {
	var s []byte
	switch x := v.(type) {
	case json.Number:
		s = []byte(x)
	case string:
		s = []byte(strings.TrimSpace(x))
	default:
		return nil, errors.New("want an integer (number, decimal or 0x-hex string)")
	}
	var p intParser
	if !p.parse(s) {
		return nil, fmt.Errorf("not an integer: %s", quote(string(s)))
	}
	return new(big.Int).Set(&p.n), nil
}

// hexBytes reads a 0x-hex string decoded into a Go value (an odd digit count reads as if it
// had a leading 0).
func hexBytes(v any) ([]byte, error) {
	s, ok := v.(string)
	if ok && hexPrefixed(s) {
		b := make([]byte, (len(s)-1)/2)
		if decodeHex(b, s[2:]) {
			return b, nil
		}
	}
	return nil, errors.New("want a 0x-hex string")
}
