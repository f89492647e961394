package signeddigits

// Count is how many digits a 256-bit scalar has at width w: 256 bits and the carry the
// recoding may push past the top.
func Count(w int) int { return (256 + w) / w }

// Recode writes the signed base-2^w digits of the big-endian k to out, least significant
// first; out must hold Count(w) digits. It runs in time that depends on k's digits, as the
// table lookups that use them do.
func Recode(k *[32]byte, w int, out []int) {
	carry := 0
	for i := range out {
		d := carry + bits(k, i*w, w)
		carry = 0
		if d > 1<<(w-1) {
			d -= 1 << w
			carry = 1
		}
		out[i] = d
	}
}

// bits returns the w bits of the big-endian k starting at bit (bits past 255 are 0).
func bits(k *[32]byte, bit, w int) int {
	v := 0
	for j := w - 1; j >= 0; j-- {
		b := bit + j
		v <<= 1
		if b < 256 {
			v |= int(k[31-b/8]>>(b%8)) & 1
		}
	}
	return v
}
