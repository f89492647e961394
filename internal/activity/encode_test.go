package activity

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/wire"
)

// signBody is a sign_raw_payload body as the SDKs send it.
var signBody = []byte(`{"type":"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2","timestampMs":"1772600767009",` +
	`"organizationId":"ec96add2-2e46-4200-bc64-e3b568e46e73","parameters":{"signWith":` +
	`"0x0153942D27086C400df3486B6Cf1DBeB91795faD","payload":` +
	`"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",` +
	`"encoding":"PAYLOAD_ENCODING_HEXADECIMAL","hashFunction":"HASH_FUNCTION_NO_OP"}}`)

// signWire is a completed sign_raw_payload activity as the engine writes it.
func signWire() *Wire {
	now := time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
	u := &directory.User{ID: "a1cd4238-7992-4a1b-8413-5cb2995da000", Name: "root", CreatedAt: now, UpdatedAt: now}
	x := &Exec{ActivityID: "d798de43-f543-407b-9cf1-141810e3bddb", Now: now, Caller: &directory.Caller{User: u,
		PublicKey: "037c19185ce92ec1188783e5cfca2a87757396561b2a08b7be648099c28cf5f654",
		Signature: "3044022046593c877c214f71607776011d79c500ea65d631f52b5e4167d07c606f5886f902200557eecf485ff7" +
			"8a0741dd34446b79e48aed226e0e34f574c9960516ce536d16",
		Scheme: "SIGNATURE_SCHEME_TK_API_P256"}}
	var env wire.SubmitEnvelope
	if err := json.Unmarshal(signBody, &env); err != nil {
		panic(err)
	}
	intent, _ := encodeIntent("signRawPayloadIntentV2", json.RawMessage(env.Parameters))
	result, _ := encodeResult("signRawPayloadResult", map[string]string{
		"r": "bad452cef7f640ea0f77f726a1a415c3b25c49528e0f4a697e79cddbef905177",
		"s": "6148097b11869cd1e7cfa6111d922c5be12e768cd6362e706b40717e9a7b94be", "v": "00"})
	return &Wire{ID: x.ActivityID, OrganizationID: "ec96add2-2e46-4200-bc64-e3b568e46e73",
		Status: StatusCompleted, Type: "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", Intent: intent, Result: result,
		Votes:       []wire.Vote{initiatorVote(x, signBody)},
		Fingerprint: Fingerprint(signBody), CreatedAt: Timestamp(now), UpdatedAt: Timestamp(now)}
}

// BenchmarkWireEncode compares the activity encoder with json.Marshal, on a signing activity.
func BenchmarkWireEncode(b *testing.B) {
	w := signWire()
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := w.encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(w); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkParseEnvelope compares ParseEnvelope with json.Unmarshal alone, on a signing body.
func BenchmarkParseEnvelope(b *testing.B) {
	b.Run("ParseEnvelope", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseEnvelope(signBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseEnvelopeSlow(signBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The request path's reading of a body: the strict pass then the envelope, as two passes
	// (CheckJSON, then json.Valid inside the envelope's reader) and as one (CheckBody's word).
	b.Run("CheckJSON+ParseEnvelope", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if fe := wire.CheckJSON(signBody); fe != nil {
				b.Fatal(fe)
			}
			if _, err := ParseEnvelope(signBody); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("CheckBody+ParseEnvelopeOf", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			valid, fe := wire.CheckBody(signBody)
			if fe != nil || !valid {
				b.Fatal(fe)
			}
			if _, err := ParseEnvelopeOf(signBody, valid); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkNewAttempt(b *testing.B) {
	h := newHarness(b)
	root := h.org(1, 1)[0]
	raw := h.body(root, "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "t", "userIds": []string{}})
	env, err := ParseEnvelope(raw)
	if err != nil {
		b.Fatal(err)
	}
	req := SubmitRequest{Path: "create_user_tag", Raw: raw, Env: env, Caller: root}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.eng.newAttempt(req); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWireEncodeMatchesMarshal holds the activity encoder to json.Marshal's bytes.
func TestWireEncodeMatchesMarshal(t *testing.T) {
	tricky := []string{"", "plain", "a<b>&c", "q\"uote\\", "\x00\x01\b\f\n\r\t\x1f\x7f", "\u2028\u2029",
		"bad\xffutf8\xe2\x80", "é漢字😀", "</script>"}
	raws := []json.RawMessage{nil, json.RawMessage(`{}`), json.RawMessage(`{"a": [1, 2]}`),
		json.RawMessage(`{"a":"<&>"}`), json.RawMessage(`{"a":"\u2028 \u2029"}`), json.RawMessage(`["a b","\"x y"]`),
		json.RawMessage(`{"k":"\\"}`), json.RawMessage(`"\\\" "`), json.RawMessage("{\n\"a\"\t:1}"),
		json.RawMessage("{\"a\":\"\u2028\"}"), json.RawMessage("[\"\u2029\"]"), json.RawMessage("[\"\u2027\"]")}
	base := signWire()
	var cases []*Wire
	cases = append(cases, base)
	for i, s := range tricky {
		w := *base
		w.ID, w.Fingerprint, w.CanApprove, w.CanReject = s, s, i%2 == 0, i%3 == 0
		v := base.Votes[0]
		v.Message, v.User.UserName, v.User.UserEmail, v.User.UserPhoneNumber = s, s, s, s
		v.User.UserTags = []string{s, "t"}
		w.Votes = []wire.Vote{v, base.Votes[0]}
		w.CreatedAt = wire.Externaldatav1Timestamp{Seconds: s, Nanos: s}
		cases = append(cases, &w)
	}
	for _, r := range raws {
		w := *base
		w.Intent, w.Result, w.AppProofs = r, r, []json.RawMessage{r, json.RawMessage(`{"p":1}`)}
		cases = append(cases, &w)
	}
	w := *base
	w.Votes, w.AppProofs = nil, []json.RawMessage{}
	st := apierr.ToStatus(apierr.Invalid("f", "bad <value> & more"))
	w.Failure = &st
	cases = append(cases, &w)
	w2 := *base
	v := base.Votes[0]
	v.User.Authenticators, v.User.ApiKeys, v.User.UserTags = nil, []wire.ApiKey{{ApiKeyId: "k<1>"}}, nil
	v.User.OauthProviders, v.User.MfaPolicies = []wire.OauthProvider{{ProviderName: "p"}}, nil
	w2.Votes = []wire.Vote{v}
	cases = append(cases, &w2, &Wire{})
	for i, w := range cases {
		want, wantErr := json.Marshal(w)
		got, err := w.encode()
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("case %d: error %v, json.Marshal's %v", i, err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
	// A string of every byte value and some runes.
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	all = append(all, "\u2028\u2029\ufffd漢"...)
	for i := range all {
		s := string(all[i:])
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestWireEncodeKnowsEveryMember fails when a member is added to the types the activity encoder
// writes by hand (a regenerated wire.Vote or wire.User): the encoder must learn it.
func TestWireEncodeKnowsEveryMember(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{Wire{}, "id organizationId status type intent result votes appProofs,omitempty fingerprint canApprove " +
			"canReject createdAt updatedAt failure,omitempty"},
		{wire.Vote{}, "id userId user activityId selection message publicKey signature scheme createdAt"},
		{wire.User{}, "userId userName userEmail,omitempty userPhoneNumber,omitempty authenticators apiKeys " +
			"userTags oauthProviders createdAt updatedAt mfaPolicies"},
		{wire.Externaldatav1Timestamp{}, "seconds nanos"},
	} {
		rt := reflect.TypeOf(tc.v)
		var tags []string
		for i := range rt.NumField() {
			tags = append(tags, rt.Field(i).Tag.Get("json"))
		}
		if got := strings.Join(tags, " "); got != tc.want {
			t.Errorf("%s members: %s\nthe encoder (encode.go) writes: %s", rt, got, tc.want)
		}
	}
}

func TestEncodeMemberMatchesMarshal(t *testing.T) {
	for _, v := range []any{nil, struct{}{}, map[string]any{"b": 1, "a": "<x>"}, &wire.SignRawPayloadIntentV2{
		SignWith: "0x01", Payload: "&"}, []string{}, "\u2028"} {
		for _, member := range []string{"signRawPayloadIntentV2", "a<b>", ""} {
			want, _ := json.Marshal(map[string]any{member: v})
			got, err := encodeMember(member, v)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("encodeMember(%q, %#v) = %s, %v; want %s", member, v, got, err, want)
			}
		}
	}
	if _, err := encodeMember("m", func() {}); err == nil {
		t.Error("encodeMember encoded a func")
	}
}

// parseEnvelopeSlow is ParseEnvelope's decoding by json.Unmarshal alone.
func parseEnvelopeSlow(raw []byte) (*wire.SubmitEnvelope, error) {
	var full struct {
		wire.SubmitEnvelope
		TimestampMs json.RawMessage `json:"timestampMs"`
	}
	if err := json.Unmarshal(raw, &full); err != nil {
		return nil, err
	}
	full.SubmitEnvelope.TimestampMs = strings.Trim(string(full.TimestampMs), `"`)
	return &full.SubmitEnvelope, nil
}

// FuzzParseEnvelope holds the direct reading of an envelope to json.Unmarshal's.
func FuzzParseEnvelope(f *testing.F) {
	for _, s := range []string{
		string(signBody),
		`{"type":"T","timestampMs":1,"organizationId":"o","parameters":{"a":[1,"}"]},"generateAppProofs":true}`,
		` {"parameters" : "x" , "generateAppProofs":false,"type":"é","organizationId":"","timestampMs":"\"1\""} `,
		`{"type":"T","type":"U"}`, `{"Type":"T"}`, `{"type":"\u0054"}`, `{"type":null}`, `{"type":1}`,
		`{"organizationId":"a\xffb"}`, `{"parameters":null}`, `{"generateAppProofs":1}`, `{"x":1}`, `[]`, `{}`,
		`{"parameters":[{"k":"v\\\""}, 2.5e3, true]}`, `{"timestampMs":{"a":"}"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := envelopeDirect(raw, false)
		// The request path's reading, on wire.CheckBody's word that raw is valid JSON, is the
		// same reading.
		if valid, fe := wire.CheckBody(raw); fe == nil && valid {
			got2, ok2 := envelopeDirect(raw, true)
			g1, _ := json.Marshal(got)
			g2, _ := json.Marshal(got2)
			if ok2 != ok || !bytes.Equal(g1, g2) {
				t.Fatalf("read %q on CheckBody's word as %s (%v), checking as %s (%v)", raw, g2, ok2, g1, ok)
			}
		}
		if !ok {
			return
		}
		want, err := parseEnvelopeSlow(raw)
		if err != nil {
			t.Fatalf("read %q, which json.Unmarshal refuses: %v", raw, err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) || !bytes.Equal(got.Parameters, want.Parameters) {
			t.Fatalf("read %q as %s, json.Unmarshal as %s", raw, g, w)
		}
	})
}

func TestParseEnvelopeDirect(t *testing.T) {
	for raw, want := range map[string]bool{
		string(signBody): true,
		`{"type":"T","timestampMs":1,"organizationId":"o","parameters":{},"generateAppProofs":true}`: true,
		`{"type":"T","type":"U"}`:    false,
		`{"Type":"T"}`:               false,
		`{"type":"\u0054"}`:          false,
		`{"parameters":null}`:        false,
		`{"x":1}`:                    false,
		`{"organizationId":"a\xff"}`: false,
	} {
		if _, ok := envelopeDirect([]byte(raw), false); ok != want {
			t.Errorf("envelopeDirect(%s): %v, want %v", raw, ok, want)
		}
	}
}
