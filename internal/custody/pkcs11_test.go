package custody

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/custody/pkcs11"
	"github.com/latchkey/latchkey/internal/custody/pkcs11/softhsmtest"
)

func TestPKCS11Check(t *testing.T) {
	good := PKCS11{Module: "/usr/lib/softhsm/libsofthsm2.so", TokenLabel: "t", KeyLabel: "k", PIN: "1234"}
	if !PKCS11Supported {
		if err := good.Check(); !errors.Is(err, errNoPKCS11) {
			t.Fatalf("Check without the pkcs11 tag: %v", err)
		}
		if _, err := good.Wrap(context.Background(), nil); !errors.Is(err, errNoPKCS11) {
			t.Fatalf("Wrap without the pkcs11 tag: %v", err)
		}
		if _, err := good.Unwrap(context.Background(), "pkcs11:v1:"); !errors.Is(err, errNoPKCS11) {
			t.Fatalf("Unwrap without the pkcs11 tag: %v", err)
		}
		return
	}
	for _, c := range []struct {
		name string
		edit func(*PKCS11)
		want string
	}{
		{"complete", func(*PKCS11) {}, ""},
		{"a slot instead of a label", func(p *PKCS11) { p.TokenLabel, p.Slot = "", "1234567" }, ""},
		{"no module", func(p *PKCS11) { p.Module = "" }, "--pkcs11-module is required"},
		{"a relative module", func(p *PKCS11) { p.Module = "libsofthsm2.so" }, "absolute path"},
		{"no token", func(p *PKCS11) { p.TokenLabel = "" }, "--pkcs11-token-label (or --pkcs11-slot) is required"},
		{"label and slot", func(p *PKCS11) { p.Slot = "1" }, "not both"},
		{"a slot that is no number", func(p *PKCS11) { p.TokenLabel, p.Slot = "", "first" }, "is not a slot ID"},
		{"no key label", func(p *PKCS11) { p.KeyLabel = "" }, "--pkcs11-key-label is required"},
		{"no PIN", func(p *PKCS11) { p.PIN = "" }, "LATCHKEY_PKCS11_PIN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := good
			c.edit(&p)
			err := p.Check()
			if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}

// Against SoftHSM2 (a build with the pkcs11 tag): a wrap unwraps to the same master key, each
// wrap has its own IV, a changed or foreign ciphertext is refused, the token is found by its slot
// too, and the key the seal makes is sensitive and not extractable.
func TestPKCS11WrapSoftHSM(t *testing.T) {
	if !PKCS11Supported {
		t.Skip("built without -tags pkcs11")
	}
	module := softhsmtest.NewToken(t, "custody", "so-pin", "user-pin")
	ctx := context.Background()
	p := PKCS11{Module: module, TokenLabel: "custody", KeyLabel: "wrap", PIN: "user-pin", CreateKey: true}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	m, err := NewMasterKey()
	if err != nil {
		t.Fatal(err)
	}
	ct1, err := p.Wrap(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	p.CreateKey = false
	ct2, err := p.Wrap(ctx, m)
	if err != nil || ct1 == ct2 || !strings.HasPrefix(ct1, "pkcs11:v1:") {
		t.Fatalf("two wraps: %q %q %v", ct1, ct2, err)
	}
	for _, ct := range []string{ct1, ct2} {
		got, err := p.Unwrap(ctx, ct)
		if err != nil || !bytes.Equal(got.k[:], m.k[:]) {
			t.Fatalf("unwrap: %v", err)
		}
	}
	flipped := []byte(ct1)
	flipped[len(flipped)-3] ^= 'A' ^ 'B'
	for name, ct := range map[string]string{"changed": string(flipped), "no prefix": strings.TrimPrefix(ct1, "pkcs11:v1:"), "short": ct1[:30], "transit's": "vault:v1:abcd"} {
		if _, err := p.Unwrap(ctx, ct); err == nil {
			t.Errorf("a %s ciphertext unwrapped", name)
		}
	}

	mod, _ := pkcs11.Load(module)
	mod.Initialize()
	defer mod.Finalize()
	slots, _ := mod.Slots()
	for _, slot := range slots {
		if l, _ := mod.TokenLabel(slot); l != "custody" {
			continue
		}
		// The token by its slot ID; the module already initialized by this process is left so.
		bySlot := p
		bySlot.TokenLabel, bySlot.Slot = "", strconv.FormatUint(slot, 10)
		if got, err := bySlot.Unwrap(ctx, ct1); err != nil || !bytes.Equal(got.k[:], m.k[:]) {
			t.Fatalf("unwrap by slot: %v", err)
		}
		absent := uint64(0)
		for slices.Contains(slots, absent) {
			absent++
		}
		bySlot.Slot = strconv.FormatUint(absent, 10)
		if _, err := bySlot.Unwrap(ctx, ct1); err == nil || !strings.Contains(err.Error(), "CKR_SLOT_ID_INVALID") {
			t.Fatalf("unwrap by another slot: %v", err)
		}
		s, err := mod.OpenSession(slot, false)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Login([]byte("user-pin")); err != nil {
			t.Fatal(err)
		}
		keys, err := s.FindObjects([]pkcs11.Attribute{pkcs11.String(pkcs11.CKA_LABEL, "wrap")}, 4)
		if err != nil || len(keys) != 1 {
			t.Fatalf("the made key: %v %v", keys, err)
		}
		for typ, want := range map[uint64]byte{pkcs11.CKA_SENSITIVE: 1, pkcs11.CKA_EXTRACTABLE: 0, pkcs11.CKA_TOKEN: 1, pkcs11.CKA_PRIVATE: 1} {
			if v, err := s.Attribute(keys[0], typ, 1); err != nil || len(v) != 1 || v[0] != want {
				t.Errorf("attribute 0x%x: %v %v, want %d", typ, v, err, want)
			}
		}
		if v, err := s.Attribute(keys[0], pkcs11.CKA_VALUE_LEN, 8); err != nil || len(v) != 8 || v[0]+v[7] != 32 {
			t.Errorf("CKA_VALUE_LEN: %v %v", v, err)
		}
		return
	}
	t.Fatal("the token is gone")
}
