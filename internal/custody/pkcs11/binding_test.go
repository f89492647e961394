package pkcs11

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/latchkey/latchkey/internal/custody/pkcs11/softhsmtest"
)

// The Go mirrors of the specification's structures have the C layout of 64-bit Unix: CK_ULONG
// and pointers are 8 bytes, each field at the next multiple of 8, no packing.
func TestStructLayout(t *testing.T) {
	if !supported {
		t.Skip("PKCS#11 is not supported on this platform")
	}
	for _, c := range []struct {
		name    string
		size    uintptr
		offsets []uintptr
		want    []uintptr
		wantLen uintptr
	}{
		{"CK_ATTRIBUTE", unsafe.Sizeof(ckAttribute{}), []uintptr{unsafe.Offsetof(ckAttribute{}.typ), unsafe.Offsetof(ckAttribute{}.value), unsafe.Offsetof(ckAttribute{}.valueLen)}, []uintptr{0, 8, 16}, 24},
		{"CK_MECHANISM", unsafe.Sizeof(ckMechanism{}), []uintptr{unsafe.Offsetof(ckMechanism{}.mechanism), unsafe.Offsetof(ckMechanism{}.parameter), unsafe.Offsetof(ckMechanism{}.parameterLen)}, []uintptr{0, 8, 16}, 24},
		{"CK_GCM_PARAMS", unsafe.Sizeof(ckGCMParams{}), []uintptr{unsafe.Offsetof(ckGCMParams{}.iv), unsafe.Offsetof(ckGCMParams{}.ivLen), unsafe.Offsetof(ckGCMParams{}.ivBits),
			unsafe.Offsetof(ckGCMParams{}.aad), unsafe.Offsetof(ckGCMParams{}.aadLen), unsafe.Offsetof(ckGCMParams{}.tagBits)}, []uintptr{0, 8, 16, 24, 32, 40}, 48},
		{"CK_C_INITIALIZE_ARGS", unsafe.Sizeof(ckInitializeArgs{}), []uintptr{unsafe.Offsetof(ckInitializeArgs{}.createMutex), unsafe.Offsetof(ckInitializeArgs{}.unlockMutex),
			unsafe.Offsetof(ckInitializeArgs{}.flags), unsafe.Offsetof(ckInitializeArgs{}.reserved)}, []uintptr{0, 24, 32, 40}, 48},
	} {
		if c.size != c.wantLen {
			t.Errorf("sizeof(%s) = %d, want %d", c.name, c.size, c.wantLen)
		}
		for i := range c.offsets {
			if c.offsets[i] != c.want[i] {
				t.Errorf("%s field %d at %d, want %d", c.name, i, c.offsets[i], c.want[i])
			}
		}
	}
}

// raw reads n bytes at p.
func raw(p unsafe.Pointer, n uintptr) []byte { return unsafe.Slice((*byte)(p), n) }

// A template is a CK_ATTRIBUTE array whose entries point at the attributes' own bytes, with
// their lengths; CK_ULONG and CK_BBOOL values are the native encodings.
func TestTemplateEncoding(t *testing.T) {
	if !supported {
		t.Skip("PKCS#11 is not supported on this platform")
	}
	attrs := []Attribute{
		Ulong(CKA_CLASS, CKO_SECRET_KEY),
		Bool(CKA_TOKEN, true),
		Bool(CKA_EXTRACTABLE, false),
		String(CKA_LABEL, "master"),
		{Type: CKA_ID},
	}
	tmpl := template(attrs)
	if len(tmpl) != len(attrs) {
		t.Fatalf("%d entries", len(tmpl))
	}
	// The array as the module reads it: 24 bytes an entry.
	mem := raw(unsafe.Pointer(&tmpl[0]), uintptr(len(tmpl))*24)
	for i, a := range attrs {
		e := mem[24*i : 24*i+24]
		if typ := binary.NativeEndian.Uint64(e[0:]); typ != a.Type {
			t.Errorf("entry %d type 0x%x, want 0x%x", i, typ, a.Type)
		}
		if n := binary.NativeEndian.Uint64(e[16:]); n != uint64(len(a.Value)) {
			t.Errorf("entry %d length %d, want %d", i, n, len(a.Value))
		}
		p := *(*unsafe.Pointer)(unsafe.Pointer(&e[8]))
		if len(a.Value) == 0 {
			if p != nil {
				t.Errorf("entry %d: an empty value has a pointer", i)
			}
			continue
		}
		if got := raw(p, uintptr(len(a.Value))); !bytes.Equal(got, a.Value) {
			t.Errorf("entry %d value %x, want %x", i, got, a.Value)
		}
	}
	if !bytes.Equal(attrs[0].Value, []byte{4, 0, 0, 0, 0, 0, 0, 0}) &&
		!bytes.Equal(attrs[0].Value, []byte{0, 0, 0, 0, 0, 0, 0, 4}) {
		t.Errorf("CKO_SECRET_KEY as CK_ULONG: %x", attrs[0].Value)
	}
	if !bytes.Equal(attrs[1].Value, []byte{1}) || !bytes.Equal(attrs[2].Value, []byte{0}) {
		t.Errorf("CK_BBOOL: %x %x", attrs[1].Value, attrs[2].Value)
	}
	if template(nil) != nil {
		t.Error("an empty template is not NULL")
	}
}

// CKM_AES_GCM's CK_MECHANISM points at a CK_GCM_PARAMS of 48 bytes: IV and its length in bytes
// and bits, the additional data and its length, the tag's length in bits.
func TestGCMParamsEncoding(t *testing.T) {
	if !supported {
		t.Skip("PKCS#11 is not supported on this platform")
	}
	iv := []byte("0123456789ab")
	aad := []byte("latchkey")
	m := gcmMechanism(iv, aad, 128)
	mm := raw(unsafe.Pointer(m), 24)
	if typ := binary.NativeEndian.Uint64(mm[0:]); typ != CKM_AES_GCM {
		t.Fatalf("mechanism 0x%x", typ)
	}
	if n := binary.NativeEndian.Uint64(mm[16:]); n != 48 {
		t.Fatalf("ulParameterLen %d, want 48", n)
	}
	p := raw(*(*unsafe.Pointer)(unsafe.Pointer(&mm[8])), 48)
	ptr := func(off int) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p[off])) }
	u := func(off int) uint64 { return binary.NativeEndian.Uint64(p[off:]) }
	if !bytes.Equal(raw(ptr(0), 12), iv) || u(8) != 12 || u(16) != 96 {
		t.Errorf("IV: %x len %d bits %d", raw(ptr(0), 12), u(8), u(16))
	}
	if !bytes.Equal(raw(ptr(24), 8), aad) || u(32) != 8 || u(40) != 128 {
		t.Errorf("AAD: %x len %d tag bits %d", raw(ptr(24), 8), u(32), u(40))
	}
	if none := gcmMechanism(iv, nil, 128); (*ckGCMParams)(none.parameter).aad != nil {
		t.Error("no additional data is not NULL")
	}
}

// Against a real SoftHSM2 token: the function list's entries are the module's exported
// functions; a wrong PIN is CKR_PIN_INCORRECT; a generated AES key is found by its label; and
// CKM_AES_GCM through the token agrees with Go's AES-GCM on the same key, IV and additional data.
func TestSoftHSM(t *testing.T) {
	module := softhsmtest.NewToken(t, "binding", "5678", "1234")
	m, err := Load(module)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range fnNames {
		want, err := dlsym(module, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m.fn(i) != want {
			t.Errorf("function list entry %d is not %s", i, name)
		}
	}
	if already, err := m.Initialize(); err != nil || already {
		t.Fatalf("C_Initialize: %v %v", already, err)
	}
	defer func() {
		if err := m.Finalize(); err != nil {
			t.Error(err)
		}
	}()
	if already, err := m.Initialize(); err != nil || !already {
		t.Fatalf("a second C_Initialize: %v %v", already, err)
	}
	slots, err := m.Slots()
	if err != nil {
		t.Fatal(err)
	}
	var slot uint64
	found := false
	for _, s := range slots {
		if label, err := m.TokenLabel(s); err == nil && label == "binding" {
			slot, found = s, true
		}
	}
	if !found {
		t.Fatalf("no token labelled binding in %v", slots)
	}
	s, err := m.OpenSession(slot, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Login([]byte("0000")); !errors.Is(err, &Error{RV: CKR_PIN_INCORRECT}) {
		t.Fatalf("a wrong PIN: %v", err)
	} else if err.Error() != "pkcs11: C_Login: CKR_PIN_INCORRECT" {
		t.Fatalf("error text %q", err)
	}
	if err := s.Login([]byte("1234")); err != nil {
		t.Fatal(err)
	}
	defer s.Logout()
	key, err := s.GenerateKey(CKM_AES_KEY_GEN, []Attribute{
		Ulong(
			CKA_CLASS,
			CKO_SECRET_KEY,
		), Ulong(CKA_KEY_TYPE, CKK_AES), Ulong(CKA_VALUE_LEN, 32), String(CKA_LABEL, "probe"),
		Bool(
			CKA_TOKEN,
			false,
		), Bool(CKA_SENSITIVE, false), Bool(CKA_EXTRACTABLE, true), Bool(CKA_ENCRYPT, true), Bool(CKA_DECRYPT, true)})
	if err != nil {
		t.Fatal(err)
	}
	found2, err := s.FindObjects([]Attribute{Ulong(CKA_CLASS, CKO_SECRET_KEY), String(CKA_LABEL, "probe")}, 4)
	if err != nil || len(found2) != 1 || found2[0] != key {
		t.Fatalf("FindObjects: %v %v (want [%d])", found2, err, key)
	}
	if none, err := s.FindObjects([]Attribute{String(CKA_LABEL, "absent")}, 4); err != nil || len(none) != 0 {
		t.Fatalf("FindObjects of an absent label: %v %v", none, err)
	}
	value, err := s.Attribute(key, CKA_VALUE, 64)
	if err != nil || len(value) != 32 {
		t.Fatalf("CKA_VALUE: %d bytes, %v", len(value), err)
	}
	iv, aad, pt := []byte("twelve bytes"), []byte("additional data"), bytes.Repeat([]byte{0x5a}, 32)
	ct, err := s.EncryptGCM(key, iv, aad, pt)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := aes.NewCipher(value)
	gcm, _ := cipher.NewGCM(block)
	if want := gcm.Seal(nil, iv, pt, aad); !bytes.Equal(ct, want) {
		t.Fatalf("the token's AES-GCM %x, Go's %x", ct, want)
	}
	out := make([]byte, len(ct))
	n, err := s.DecryptGCM(key, iv, aad, ct, out)
	if err != nil || !bytes.Equal(out[:n], pt) {
		t.Fatalf("DecryptGCM: %x %v", out[:n], err)
	}
	if _, err := s.DecryptGCM(key, iv, []byte("other data"), ct, out); err == nil {
		t.Fatal("other additional data decrypted")
	}
	ct[0] ^= 1
	if _, err := s.DecryptGCM(key, iv, aad, ct, out); err == nil {
		t.Fatal("a changed ciphertext decrypted")
	}
}
