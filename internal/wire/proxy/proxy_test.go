package proxy

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/latchkey/latchkey/internal/wire"
)

func TestOps(t *testing.T) {
	if len(Ops) != 13 {
		t.Fatalf("len(Ops) = %d, want 13", len(Ops))
	}
	for i, op := range Ops {
		if i > 0 && Ops[i-1].Path >= op.Path {
			t.Errorf("Ops not sorted: %s before %s", Ops[i-1].Path, op.Path)
		}
		if op.Route != "/v1/"+op.Path || op.NewRequest == nil || op.NewResponse == nil {
			t.Errorf("incomplete op %+v", op)
		}
	}
	op, ok := Lookup("otp_init_v2")
	if !ok {
		t.Fatal("no otp_init_v2")
	}
	if _, ok := op.NewRequest().(*InitOtpV2Request); !ok {
		t.Errorf("otp_init_v2 request is %T", op.NewRequest())
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup(nope) found an op")
	}
}

func TestValidate(t *testing.T) {
	op, _ := Lookup("otp_verify")
	req := op.NewRequest()
	// An identifier refuses "" (an empty code is the handler's to refuse: required means named,
	// as in Turnkey's proto3 API).
	if err := json.Unmarshal([]byte(`{"otpCode":"","extra":1}`), req); err != nil {
		t.Fatal(err)
	}
	var fe *wire.FieldError
	if err := req.Validate(""); !errors.As(err, &fe) || fe.Field != "otpId" {
		t.Errorf("Validate = %v, want otpId is required", err)
	}
}
