package activity

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/latchkey/latchkey/internal/wire"
)

// plainIntentTypes are the intent types of every submit operation, and the request types of every
// query, that plainIntent reads.
func plainIntentTypes(t testing.TB) []func() wire.Validator {
	var out []func() wire.Validator
	for _, op := range wire.Ops {
		if op.Kind == wire.Query && op.NewRequest != nil {
			if planFor(reflect.TypeOf(op.NewRequest()).Elem()).names != nil {
				out = append(out, op.NewRequest)
			}
			continue
		}
		for _, v := range op.Versions {
			if v.NewIntent == nil {
				continue
			}
			if planFor(reflect.TypeOf(v.NewIntent()).Elem()).names != nil {
				out = append(out, v.NewIntent)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no intent type is read by plainIntent")
	}
	return out
}

func TestPlainIntent(t *testing.T) {
	var sign wire.SignRawPayloadIntentV2
	if planFor(reflect.TypeOf(sign)).names == nil {
		t.Fatal("sign_raw_payload's intent is not read by plainIntent")
	}
	for raw, want := range map[string]bool{
		`{"signWith":"0xab","payload":"00","encoding":"PAYLOAD_ENCODING_HEXADECIMAL","hashFunction":"HASH_FUNCTION_NO_OP"}`: true,
		`{}`:                            true,
		` { "payload" : "x" } `:         true,
		`{"payload":"a","payload":"b"}`: false,
		`{"Payload":"x"}`:               false,
		`{"payload":"\u0041"}`:          false,
		`{"payload":null}`:              false,
		`{"payload":1}`:                 false,
		`{"payload":"x","other":1}`:     false,
		"{\"payload\":\"a\xffb\"}":      false,
		`{"payload":"x"`:                false,
		`null`:                          false,
		`[]`:                            false,
	} {
		var got wire.SignRawPayloadIntentV2
		if ok := plainIntent([]byte(raw), &got); ok != want {
			t.Errorf("plainIntent(%s) = %v, want %v", raw, ok, want)
		}
	}
	if n := len(plainIntentTypes(t)); n < 2 {
		t.Fatalf("%d intent types read", n)
	}
	if planFor(reflect.TypeOf(wire.GetWhoamiRequest{})).names == nil {
		t.Fatal("whoami's body is not read by plainIntent")
	}
}

// FuzzPlainIntent holds plainIntent to json.Unmarshal on every intent type it reads.
func FuzzPlainIntent(f *testing.F) {
	for _, s := range []string{
		`{"signWith":"0xab","payload":"00","encoding":"PAYLOAD_ENCODING_HEXADECIMAL","hashFunction":"HASH_FUNCTION_NO_OP"}`,
		`{"payload":"a","payload":"b"}`, `{"PAYLOAD":"x"}`, `{"payload":"é"}`, `{"payload":null}`, `{}`,
		`{"organizationId":"o","userId":"u"}`, `{"payload":"x","encoding":"y"}`,
	} {
		f.Add([]byte(s))
	}
	types := plainIntentTypes(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, newIntent := range types {
			got, want := newIntent(), newIntent()
			if !plainIntent(raw, got) {
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("plainIntent(%q) refused it but changed the %T", raw, got)
				}
				continue
			}
			if err := json.Unmarshal(raw, want); err != nil {
				t.Fatalf("plainIntent read %q as %T, which json.Unmarshal refuses: %v", raw, got, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("plainIntent read %q as %+v, json.Unmarshal as %+v", raw, got, want)
			}
		}
	})
}

// BenchmarkDecodeSignIntent compares plainIntent with json.Unmarshal on a signing intent.
func BenchmarkDecodeSignIntent(b *testing.B) {
	params := []byte(`{"signWith":"0x0153942D27086C400df3486B6Cf1DBeB91795faD","payload":` +
		`"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",` +
		`"encoding":"PAYLOAD_ENCODING_HEXADECIMAL","hashFunction":"HASH_FUNCTION_NO_OP"}`)
	b.Run("plainIntent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !plainIntent(params, new(wire.SignRawPayloadIntentV2)) {
				b.Fatal("not read")
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := json.Unmarshal(params, new(wire.SignRawPayloadIntentV2)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
