package activity

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/latchkey/latchkey/internal/wire"
)

// The activity JSON is written inside the transaction that records the activity, once per
// activity, and encoding/json spent most of its time there reflecting over Wire, wire.Vote and
// wire.User and re-scanning the intent and result it had itself encoded a moment before. The
// encoder below writes the same bytes as json.Marshal(w) (TestWireEncodeMatchesMarshal holds it
// to that): it writes the members it knows in their declared order and hands anything else (a
// failure, a user's non-empty credential lists, JSON that is not already compact) to
// encoding/json, whose output for a value alone is what it writes for that value as a member.

// appendWire appends json.Marshal(w) to b.
func appendWire(b []byte, w *Wire) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, w.ID)
	b = append(b, `,"organizationId":`...)
	b = appendString(b, w.OrganizationID)
	b = append(b, `,"status":`...)
	b = appendString(b, w.Status)
	b = append(b, `,"type":`...)
	b = appendString(b, w.Type)
	b = append(b, `,"intent":`...)
	b, err := appendRaw(b, w.Intent)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"result":`...)
	if b, err = appendRaw(b, w.Result); err != nil {
		return nil, err
	}
	b = append(b, `,"votes":`...)
	if b, err = appendArray(b, w.Votes, appendVote); err != nil {
		return nil, err
	}
	if len(w.AppProofs) > 0 {
		b = append(b, `,"appProofs":`...)
		if b, err = appendArray(b, w.AppProofs, appendRawAt); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"fingerprint":`...)
	b = appendString(b, w.Fingerprint)
	b = append(b, `,"canApprove":`...)
	b = appendBool(b, w.CanApprove)
	b = append(b, `,"canReject":`...)
	b = appendBool(b, w.CanReject)
	b = append(b, `,"createdAt":`...)
	b = appendTimestamp(b, w.CreatedAt)
	b = append(b, `,"updatedAt":`...)
	b = appendTimestamp(b, w.UpdatedAt)
	if w.Failure != nil {
		b = append(b, `,"failure":`...)
		if b, err = appendMarshal(b, w.Failure); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendVote(b []byte, v *wire.Vote) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, v.Id)
	b = append(b, `,"userId":`...)
	b = appendString(b, v.UserId)
	b = append(b, `,"user":`...)
	b, err := appendUser(b, &v.User)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"activityId":`...)
	b = appendString(b, v.ActivityId)
	b = append(b, `,"selection":`...)
	b = appendString(b, v.Selection)
	b = append(b, `,"message":`...)
	b = appendString(b, v.Message)
	b = append(b, `,"publicKey":`...)
	b = appendString(b, v.PublicKey)
	b = append(b, `,"signature":`...)
	b = appendString(b, v.Signature)
	b = append(b, `,"scheme":`...)
	b = appendString(b, v.Scheme)
	b = append(b, `,"createdAt":`...)
	b = appendTimestamp(b, v.CreatedAt)
	return append(b, '}'), nil
}

func appendUser(b []byte, u *wire.User) ([]byte, error) {
	b = append(b, `{"userId":`...)
	b = appendString(b, u.UserId)
	b = append(b, `,"userName":`...)
	b = appendString(b, u.UserName)
	if u.UserEmail != "" {
		b = append(b, `,"userEmail":`...)
		b = appendString(b, u.UserEmail)
	}
	if u.UserPhoneNumber != "" {
		b = append(b, `,"userPhoneNumber":`...)
		b = appendString(b, u.UserPhoneNumber)
	}
	var err error
	b = append(b, `,"authenticators":`...)
	if b, err = appendList(b, u.Authenticators); err != nil {
		return nil, err
	}
	b = append(b, `,"apiKeys":`...)
	if b, err = appendList(b, u.ApiKeys); err != nil {
		return nil, err
	}
	b = append(b, `,"userTags":`...)
	b, _ = appendArray(b, u.UserTags, func(b []byte, t *string) ([]byte, error) { return appendString(b, *t), nil })
	b = append(b, `,"oauthProviders":`...)
	if b, err = appendList(b, u.OauthProviders); err != nil {
		return nil, err
	}
	b = append(b, `,"createdAt":`...)
	b = appendTimestamp(b, u.CreatedAt)
	b = append(b, `,"updatedAt":`...)
	b = appendTimestamp(b, u.UpdatedAt)
	b = append(b, `,"mfaPolicies":`...)
	if b, err = appendList(b, u.MfaPolicies); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendArray appends l as encoding/json does (null when nil), each element with each.
func appendArray[T any](b []byte, l []T, each func([]byte, *T) ([]byte, error)) ([]byte, error) {
	if l == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range l {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = each(b, &l[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendRawAt(b []byte, m *json.RawMessage) ([]byte, error) { return appendRaw(b, *m) }

// appendList appends a list member: null, [] or, for a list with elements, encoding/json's.
func appendList[T any](b []byte, l []T) ([]byte, error) {
	switch {
	case l == nil:
		return append(b, "null"...), nil
	case len(l) == 0:
		return append(b, "[]"...), nil
	}
	return appendMarshal(b, l)
}

func appendMarshal(b []byte, v any) ([]byte, error) {
	m, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, m...), nil
}

func appendTimestamp(b []byte, t wire.Externaldatav1Timestamp) []byte {
	b = append(b, `{"seconds":`...)
	b = appendString(b, t.Seconds)
	b = append(b, `,"nanos":`...)
	b = appendString(b, t.Nanos)
	return append(b, '}')
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendRaw appends a json.RawMessage member as encoding/json does: null when nil, else compact
// with <, >, &, U+2028 and U+2029 escaped. JSON already in that form (as json.Marshal and
// json.Unmarshal leave it, the only ways the engine makes it) is copied as it is, without the
// grammar check encoding/json repeats; anything else goes through encoding/json.
func appendRaw(b []byte, m json.RawMessage) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	if !canonicalJSON(m) {
		return appendMarshal(b, m)
	}
	return append(b, m...), nil
}

// canonicalJSON reports whether m, taken to be valid JSON, is compact and holds none of the
// characters encoding/json escapes in a RawMessage (<, >, &, U+2028, U+2029).
func canonicalJSON(m []byte) bool {
	if len(m) == 0 {
		return false
	}
	in := false
	for i := 0; i < len(m); i++ {
		switch c := m[i]; c {
		case '"':
			in = !in
		case '\\':
			if in {
				i++ // the escaped byte (an escaped quote does not end the string)
			}
		case ' ', '\t', '\n', '\r':
			if !in {
				return false
			}
		case '<', '>', '&':
			return false
		case 0xE2:
			if i+2 < len(m) && m[i+1] == 0x80 && m[i+2]&^1 == 0xA8 {
				return false
			}
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json does (HTML-safe): ", \ and
// control characters escaped (\b, \f, \n, \r, \t by name), <, > and & as \u00XX, invalid UTF-8
// as \ufffd, U+2028 and U+2029 as \u2028 and \u2029.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
