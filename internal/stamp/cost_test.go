package stamp

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"unsafe"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

// Hostile JSON shapes of about n bytes, each a stamp's JSON object with one hostile member.
func deepArrays(n int) string   { return strings.Repeat("[", n/2) + strings.Repeat("]", n/2) }
func deepObjects(n int) string  { return strings.Repeat(`{"a":`, n/5) + "0" + strings.Repeat("}", n/5) }
func manyMembers(n int) string  { return "{" + strings.Repeat(`"a":0,`, n/6) + `"b":0}` }
func manyElements(n int) string { return "[" + strings.Repeat("0,", n/2) + "0]" }
func escapes(n int) string      { return `"` + strings.Repeat(`\u0041`, n/6) + `"` }

// dupKeys repeats one of the stamp's own members, each time with a long value.
func dupKeys(name string, n int) string {
	one := `"` + name + `":"` + strings.Repeat("a", 64) + `",`
	return strings.Repeat(one, n/len(one))
}

type jsonShape struct {
	name string
	make func(n int) string
}

var hostileJSON = []jsonShape{
	{"deep arrays", deepArrays},
	{"deep objects", deepObjects},
	{"many members", manyMembers},
	{"many elements", manyElements},
	{"escapes", escapes},
}

// stampShapes wraps each hostile value as the value of member inside a stamp JSON object, and
// adds duplicate keys; wrap encodes the JSON as the header carries it.
func stampShapes(prefix, member string, wrap func([]byte) []byte, run func(header string)) []costtest.Shape {
	var shapes []costtest.Shape
	for _, h := range hostileJSON {
		shapes = append(shapes, costtest.Shape{
			Name: prefix + " " + h.name,
			Make: func(n int) []byte { return wrap([]byte(`{"` + member + `":` + h.make(n) + `}`)) },
			Run:  func(in []byte) { run(str(in)) },
		})
	}
	shapes = append(shapes, costtest.Shape{
		Name: prefix + " duplicate keys",
		Make: func(n int) []byte { return wrap([]byte(`{` + dupKeys(member, n) + `"x":0}`)) },
		Run:  func(in []byte) { run(str(in)) },
	})
	return shapes
}

// str is in as a string without a copy, so that a shape's allocation is the parser's alone (a
// header arrives as a string).
func str(in []byte) string { return unsafe.String(unsafe.SliceData(in), len(in)) }

func b64url(b []byte) []byte { return []byte(base64.RawURLEncoding.EncodeToString(b)) }
func asIs(b []byte) []byte   { return b }

// The three stamp headers cost no more than their size, whatever JSON they carry, and a header
// over MaxStampHeaderBytes is refused before it is decoded.
func TestStampHeadersCost(t *testing.T) {
	body := []byte(`{"organizationId":"o"}`)
	n := 8 << 10 // 8 KiB and 32 KiB of JSON: the largest under the header limit
	var shapes []costtest.Shape
	shapes = append(shapes, stampShapes("X-Stamp", "publicKey", b64url, func(h string) {
		_, _ = VerifyAPIKey(h, body)
	})...)
	shapes = append(shapes, stampShapes("X-Stamp-WebAuthn", "clientDataJson", asIs, func(h string) {
		_, _ = ParseWebAuthn(h)
	})...)
	shapes = append(shapes, stampShapes("X-Stamp-Attested", "publicKeyAttestation", b64url, func(h string) {
		_, _ = VerifyAttested(h, body)
	})...)
	over := func(name string, run func(string)) costtest.Shape {
		return costtest.Shape{
			Name: name + " over the limit",
			Make: func(n int) []byte { return b64url(bytes.Repeat([]byte("["), MaxStampHeaderBytes+n)) },
			Run:  func(in []byte) { run(str(in)) },
			// Refused on its length: nothing proportional to it is allocated.
			PerByte: 0.01,
		}
	}
	shapes = append(shapes,
		over("X-Stamp", func(h string) { _, _ = VerifyAPIKey(h, body) }),
		over("X-Stamp-WebAuthn", func(h string) { _, _ = ParseWebAuthn(h) }),
		over("X-Stamp-Attested", func(h string) { _, _ = VerifyAttested(h, body) }))
	costtest.Linear(t, n, shapes...)
}

// clientDataJSON is parsed only after the header is: its own hostile shapes, through Verify.
func TestClientDataJSONCost(t *testing.T) {
	auth, _ := stamptest.New(testRPID, testOrigin)
	cose := auth.COSEPublicKey()
	body := []byte(`{"organizationId":"o"}`)
	ad := stamptest.AuthenticatorData(testRPID, flagUP, 1)
	var shapes []costtest.Shape
	for _, h := range hostileJSON {
		shapes = append(shapes, costtest.Shape{
			Name: "clientDataJSON " + h.name,
			Make: func(n int) []byte {
				return []byte(`{"type":"webauthn.get","origin":` + h.make(n) + `}`)
			},
			Run: func(in []byte) {
				a := Assertion{CredentialID: "AA", AuthenticatorData: ad, ClientDataJSON: in, Signature: []byte{1}}
				_, _ = a.Verify(body, cose, testPolicy)
			},
		})
	}
	costtest.Linear(t, 8<<10, shapes...)
}

// cborShapes are hostile CBOR documents of about n bytes.
var cborShapes = []struct {
	name string
	make func(n int) []byte
}{
	// An array of n one-byte integers: the most items per byte.
	{"many small items", func(n int) []byte {
		return append(cborHead(4, uint64(n)), bytes.Repeat([]byte{0x00}, n)...)
	}},
	// Arrays nested to the depth limit, each holding many items, the innermost the most.
	{"nested arrays at max depth", func(n int) []byte {
		var b []byte
		for range MaxCBORDepth - 1 {
			b = append(b, 0x82, 0x00) // [0, [...]]
		}
		return append(append(b, cborHead(4, uint64(n))...), bytes.Repeat([]byte{0x00}, n)...)
	}},
	// Maps of the most pairs, whose text keys share a long prefix, so every duplicate check
	// compares many bytes.
	{"maps of long similar keys", func(n int) []byte {
		keyLen := 64
		perMap := MaxCBORMapPairs
		maps := max(1, n/(perMap*(keyLen+3)))
		b := cborHead(4, uint64(maps))
		for range maps {
			b = append(b, cborHead(5, uint64(perMap))...)
			for i := range perMap {
				k := append(bytes.Repeat([]byte("k"), keyLen-3), byte('0'+i/100), byte('0'+i/10%10), byte('0'+i%10))
				b = append(append(b, cborHead(3, uint64(keyLen))...), k...)
				b = append(b, 0x00)
			}
		}
		return b
	}},
	// Indefinite-length strings of one-byte chunks: many appends.
	{"indefinite string chunks", func(n int) []byte {
		b := []byte{0x5f}
		for range n / 2 {
			b = append(b, 0x41, 'x')
		}
		return append(b, 0xff)
	}},
	// Heads declaring huge lengths that the data does not hold, behind many small items.
	{"huge declared lengths", func(n int) []byte {
		b := cborHead(4, uint64(n/10+1))
		for range n / 10 {
			b = append(b, 0x9f, 0x00, 0xff, 0x81, 0x00, 0xa1, 0x00, 0x00, 0x41, 'x')
		}
		return append(b, 0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff) // a byte string of 2^63-1 bytes
	}},
	// Byte strings of every size, each copied once.
	{"many byte strings", func(n int) []byte {
		b := cborHead(4, uint64(n/34))
		for range n / 34 {
			b = append(append(b, 0x58, 32), bytes.Repeat([]byte{7}, 32)...)
		}
		return b
	}},
}

func cborHead(major byte, arg uint64) []byte {
	switch {
	case arg < 24:
		return []byte{major<<5 | byte(arg)}
	case arg < 1<<8:
		return []byte{major<<5 | 24, byte(arg)}
	case arg < 1<<16:
		return []byte{major<<5 | 25, byte(arg >> 8), byte(arg)}
	}
	return []byte{major<<5 | 26, byte(arg >> 24), byte(arg >> 16), byte(arg >> 8), byte(arg)}
}

// The CBOR decoder, and the attestation parser that runs it on an attestationObject, cost no
// more than their input, whatever its shape.
func TestCBORCost(t *testing.T) {
	var shapes []costtest.Shape
	for _, s := range cborShapes {
		shapes = append(shapes, costtest.Shape{
			Name: "cbor " + s.name,
			Make: s.make,
			Run:  func(in []byte) { _, _ = cborDecode(in) },
		})
	}
	auth, _ := stamptest.New(testRPID, testOrigin)
	challenge := []byte("cost-challenge")
	reg, _ := auth.Attest(challenge, "none")
	for _, s := range cborShapes {
		shapes = append(shapes, costtest.Shape{
			Name: "attestationObject " + s.name,
			// {"fmt": "none", "attStmt": <hostile>, "authData": ...}: the hostile part is decoded
			// before the map's members are looked at.
			Make: func(n int) []byte {
				b := []byte{0xa3, 0x63, 'f', 'm', 't', 0x64, 'n', 'o', 'n', 'e', 0x67}
				b = append(append(b, "attStmt"...), s.make(n)...)
				return append(append(b, 0x68), "authData"...)
			},
			Run: func(in []byte) {
				att := Attestation{
					CredentialID:      reg.CredentialID,
					ClientDataJSON:    reg.ClientDataJSON,
					AttestationObject: base64.RawURLEncoding.EncodeToString(in),
				}
				_, _ = ParseAttestation(att, base64.RawURLEncoding.EncodeToString(challenge), testPolicy)
			},
		})
	}
	costtest.Linear(t, 8<<10, shapes...)
}
