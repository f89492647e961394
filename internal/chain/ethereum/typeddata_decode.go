package ethereum

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/maphash"
	"io"
	"math"
	"reflect"
	"strings"
)

// Decoding the payload. The first implementation decoded it with encoding/json into maps and
// slices: types into map[string][]typedField, domain and message into map[string]any. Decoded
// so, a message costs some 60 bytes of memory per byte of JSON, and a types object of many
// small struct types some 20. Here encoding/json checks the payload and decodes primaryType;
// domain, message and types stay bytes of the payload, and types is decoded only once it is
// known to declare no more struct types than MaxTypedDataTypes. What the payload means, and
// each refusal and its message, are the first implementation's (typeddata_diff_test.go
// compares the two).

// typedPayload is the JSON of a payload as viem's serializeTypedData and ethers'
// TypedDataEncoder.getPayload write it. Its name and its members' names appear in the
// errors of encoding/json that refusals repeat.
type typedPayload struct {
	Types       rawMember[map[string][]typedField] `json:"types"`
	PrimaryType string                             `json:"primaryType"`
	Domain      rawMember[map[string]any]          `json:"domain"`
	Message     rawMember[map[string]any]          `json:"message"`
}

// rawMember is a member of the payload that encoding/json would decode into a map of type T,
// kept as the bytes of its object. It follows encoding/json's rules for a map: a null forgets
// the objects before it, and an object given again (the member named twice, in any case) is
// merged into the first; those objects are found again in the payload when they are needed.
type rawMember[T any] struct {
	n       int                      // the objects given since the last null
	first   []byte                   // the first of them
	typeErr *json.UnmarshalTypeError // the first value neither an object nor null
	errCap  int                      // cap of that value's bytes: where it starts in the payload
}

// UnmarshalJSON keeps the bytes of an object: encoding/json hands them as a slice of the
// payload, without copying or decoding them.
func (r *rawMember[T]) UnmarshalJSON(b []byte) error {
	switch b[0] {
	case '{':
		if r.n == 0 {
			r.first = b
		}
		r.n++
	case 'n':
		r.n, r.first = 0, nil
	default:
		// The error encoding/json reports for this value in a T. It is kept rather than
		// returned: returned, it would stop the decoding, and an error the decoder meets
		// earlier in the payload would no longer be the one reported.
		var te *json.UnmarshalTypeError
		if r.typeErr == nil && errors.As(json.Unmarshal(b, new(T)), &te) {
			r.typeErr, r.errCap = te, cap(b)
		}
	}
	return nil
}

// objects is a member's objects in the payload's top-level object body.
type objects struct {
	body  []byte
	name  string // the member's name in typedPayload
	n     int
	first []byte
}

func objectsOf[T any](body []byte, name string, r *rawMember[T]) objects {
	return objects{body: body, name: name, n: r.n, first: r.first}
}

// all yields the objects, in order.
func (o objects) all(yield func([]byte) bool) {
	if o.n <= 1 {
		if o.n == 1 {
			yield(o.first)
		}
		return
	}
	var key []byte
	skip := -1 // the members before the last null
	for i, v := range topMembers(o.body, o.name, &key) {
		if v[0] == 'n' {
			skip = i
		}
	}
	for i, v := range topMembers(o.body, o.name, &key) {
		if i > skip && v[0] == '{' && !yield(v) {
			return
		}
	}
}

// topMembers yields the values of the members of the top-level object body that encoding/json
// decodes into the member name of typedPayload: whose names are name in any case
// (bytes.EqualFold, as encoding/json matches them), numbered from 0.
func topMembers(body []byte, name string, key *[]byte) func(yield func(int, []byte) bool) {
	return func(yield func(int, []byte) bool) {
		i := skipBlank(body, 0)
		if i == len(body) || body[i] != '{' {
			return
		}
		for n := 0; ; {
			k, v, more := nextMember(body, i)
			if !more {
				return
			}
			end := skipValue(body, v)
			if _, escaped, high := stringEnd(k, 0); bytes.EqualFold(stringValue(k, escaped, high, key), []byte(name)) {
				if !yield(n, body[v:end]) {
					return
				}
				n++
			}
			i = skipBlank(body, end)
		}
	}
}

// decodePayload decodes the payload's first JSON value into p as json.Decoder.Decode did,
// followed by Decoder.More: what follows the value must be blank or begin with ']' or '}'
// (which More takes for the end of a stream). It returns the value's bytes. encoding/json
// reads the payload in place: the decoder would first copy it into a buffer of its own.
func decodePayload(payload []byte, p *typedPayload) (body []byte, err error) {
	err = unmarshalPayload(payload, p)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return payload, err
	}
	switch msg := se.Error(); {
	// A value cut short: at the end, the scanner steps over a space, which may complete the
	// value, or not ("unexpected end"), or break a literal or a number ("tr", "1e"); the
	// decoder reads any of them as an unexpected EOF.
	case msg == "unexpected end of JSON input",
		se.Offset == int64(len(payload)) && strings.HasPrefix(msg, "invalid character ' '") &&
			!isBlank(payload[len(payload)-1]):
		if len(bytes.TrimLeft(payload, " \t\r\n")) == 0 {
			return nil, io.EOF
		}
		return nil, io.ErrUnexpectedEOF
	case strings.HasSuffix(msg, " after top-level value") && se.Offset > 0 && se.Offset <= int64(len(payload)):
		end := int(se.Offset - 1) // the first byte after the value that is not blank
		*p = typedPayload{}
		if err := unmarshalPayload(payload[:end], p); err != nil {
			return nil, err
		}
		if c := payload[end]; c != ']' && c != '}' {
			return nil, errors.New("trailing data after the JSON object")
		}
		return payload[:end], nil
	}
	return nil, err
}

// unmarshalPayload is json.Unmarshal into p, reporting the error encoding/json reported first
// when it decoded types, domain and message into maps: the first in the payload.
func unmarshalPayload(b []byte, p *typedPayload) error {
	err := json.Unmarshal(b, p)
	if _, syntax := err.(*json.SyntaxError); syntax {
		return err
	}
	var first *json.UnmarshalTypeError
	at := 0
	consider := func(e *json.UnmarshalTypeError, where int, field string) {
		if e != nil && (first == nil || where < at) {
			first, at = e, where
			if field != "" {
				first.Struct, first.Field = "typedPayload", field
			}
		}
	}
	consider(p.Types.typeErr, cap(b)-p.Types.errCap, "types")
	consider(p.Domain.typeErr, cap(b)-p.Domain.errCap, "domain")
	consider(p.Message.typeErr, cap(b)-p.Message.errCap, "message")
	consider(typesError(b))
	var te *json.UnmarshalTypeError
	if first != nil && (err == nil || errors.As(err, &te) && int64(at) < te.Offset) {
		return first
	}
	return err
}

var (
	typedFieldsType = reflect.TypeFor[[]typedField]()
	typedFieldType  = reflect.TypeFor[typedField]()
	stringType      = reflect.TypeFor[string]()
)

// typesError is the first error encoding/json reports decoding the objects given for types
// into map[string][]typedField (values that are neither arrays nor null, elements neither
// objects nor null, a name or a type neither a string nor null), where it starts in body, and
// "" (the error names its field).
func typesError(body []byte) (*json.UnmarshalTypeError, int, string) {
	var key []byte
	for _, o := range topMembers(body, "types", &key) {
		if o[0] != '{' {
			continue // rawMember's
		}
		for i := 0; ; {
			_, v, more := nextMember(o, i)
			if !more {
				break
			}
			if e, at := fieldsError(o, v, &key); e != nil {
				return e, cap(body) - cap(o) + at, ""
			}
			i = skipBlank(o, skipValue(o, v))
		}
	}
	return nil, 0, ""
}

// fieldsError is typesError for the []typedField at o[v].
func fieldsError(o []byte, v int, key *[]byte) (*json.UnmarshalTypeError, int) {
	switch o[v] {
	case 'n':
		return nil, 0
	case '[':
	default:
		return typeErr(o[v], typedFieldsType, "typedPayload", "types"), v
	}
	for i := v; ; {
		e, more := nextElement(o, i)
		if !more {
			return nil, 0
		}
		switch o[e] {
		case 'n':
		case '{':
			for j := e; ; {
				k, x, more := nextMember(o, j)
				if !more {
					break
				}
				_, escaped, high := stringEnd(k, 0)
				name := stringValue(k, escaped, high, key)
				for _, f := range []string{"name", "type"} {
					if bytes.EqualFold(name, []byte(f)) && o[x] != '"' && o[x] != 'n' {
						return typeErr(o[x], stringType, "typedField", "types."+f), x
					}
				}
				j = skipBlank(o, skipValue(o, x))
			}
		default:
			return typeErr(o[e], typedFieldType, "typedPayload", "types"), e
		}
		i = skipBlank(o, skipValue(o, e))
	}
}

// typeErr is encoding/json's error for a value starting with c decoded into a t.
func typeErr(c byte, t reflect.Type, structName, field string) *json.UnmarshalTypeError {
	value := "number"
	switch c {
	case '{':
		value = "object"
	case '[':
		value = "array"
	case '"':
		value = "string"
	case 't', 'f':
		value = "bool"
	}
	return &json.UnmarshalTypeError{Value: value, Type: t, Struct: structName, Field: field}
}

// decodeTypes decodes the types objects into a map, once it knows they declare no more struct
// types than MaxTypedDataTypes (EIP712Domain included, derived or not), which it refuses as
// compileTypes does: decoded, many small types cost some 20 bytes of memory per byte.
func decodeTypes(types objects) (map[string][]typedField, error) {
	members := 0
	for o := range types.all {
		for i := 0; ; members++ {
			_, v, more := nextMember(o, i)
			if !more {
				break
			}
			i = skipBlank(o, skipValue(o, v))
		}
	}
	if members > MaxTypedDataTypes && len(types.body) > math.MaxInt32-1 {
		return nil, typedErr("a payload of more than 2 GiB declares more than %d struct types", MaxTypedDataTypes)
	}
	if members > MaxTypedDataTypes {
		n, domain := distinctNames(types, members)
		if !domain {
			n++ // compileTypes derives it
		}
		if n > MaxTypedDataTypes {
			return nil, typedErr("types declares %d struct types, more than the %d allowed", n, MaxTypedDataTypes)
		}
	}
	var m map[string][]typedField
	for o := range types.all {
		if err := json.Unmarshal(o, &m); err != nil {
			return nil, typedErr("%v", err) // typesError found none: not reached
		}
	}
	return m, nil
}

// distinctNames counts the distinct member names of the types objects (members in all), and
// whether EIP712Domain is one, with a table of where each first appears in the payload: at
// most 16 bytes of memory per member, where decoding into a map takes some 200.
func distinctNames(types objects, members int) (n int, domain bool) {
	size := 1
	for size < 2*members {
		size <<= 1
	}
	slots := make([]int32, size) // 0 empty, else 1 + where the name's quote is in body
	var a, b []byte              // names with escapes or malformed UTF-8, decoded
	seed := maphash.MakeSeed()
	for o := range types.all {
		base := cap(types.body) - cap(o)
		for i := 0; ; {
			k, v, more := nextMember(o, i)
			if !more {
				break
			}
			_, escaped, high := stringEnd(k, 0)
			name := stringValue(k, escaped, high, &a)
			for s := maphash.Bytes(seed, name) & uint64(size-1); ; s = (s + 1) & uint64(size-1) {
				if slots[s] == 0 {
					slots[s] = int32(base + cap(o) - cap(k) + 1)
					n++
					domain = domain || string(name) == "EIP712Domain"
					break
				}
				at := int(slots[s] - 1)
				end, escaped, high := stringEnd(types.body, at)
				if bytes.Equal(stringValue(types.body[at:end], escaped, high, &b), name) {
					break
				}
			}
			i = skipBlank(o, skipValue(o, v))
		}
	}
	return n, domain
}
