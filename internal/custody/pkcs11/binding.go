package pkcs11

import (
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"unsafe"
)

// Indices in CK_FUNCTION_LIST (after its CK_VERSION, padded to a pointer): the order of the
// function declarations in the specification.
const (
	fnInitialize        = 0
	fnFinalize          = 1
	fnGetFunctionList   = 3
	fnGetSlotList       = 4
	fnGetTokenInfo      = 6
	fnOpenSession       = 12
	fnCloseSession      = 13
	fnLogin             = 18
	fnLogout            = 19
	fnGetAttributeValue = 24
	fnFindObjectsInit   = 26
	fnFindObjects       = 27
	fnFindObjectsFinal  = 28
	fnEncryptInit       = 29
	fnEncrypt           = 30
	fnDecryptInit       = 33
	fnDecrypt           = 34
	fnGenerateKey       = 58
)

// fnNames names the functions above, for errors and for the test that checks each index against
// the symbol the module exports.
var fnNames = map[int]string{
	fnInitialize: "C_Initialize", fnFinalize: "C_Finalize", fnGetFunctionList: "C_GetFunctionList",
	fnGetSlotList: "C_GetSlotList", fnGetTokenInfo: "C_GetTokenInfo", fnOpenSession: "C_OpenSession",
	fnCloseSession: "C_CloseSession", fnLogin: "C_Login", fnLogout: "C_Logout",
	fnGetAttributeValue: "C_GetAttributeValue", fnFindObjectsInit: "C_FindObjectsInit",
	fnFindObjects: "C_FindObjects", fnFindObjectsFinal: "C_FindObjectsFinal",
	fnEncryptInit: "C_EncryptInit", fnEncrypt: "C_Encrypt", fnDecryptInit: "C_DecryptInit",
	fnDecrypt: "C_Decrypt", fnGenerateKey: "C_GenerateKey",
}

// ckAttribute is CK_ATTRIBUTE: {CK_ATTRIBUTE_TYPE type; CK_VOID_PTR pValue; CK_ULONG ulValueLen}.
type ckAttribute struct {
	typ      ulong
	value    unsafe.Pointer
	valueLen ulong
}

// ckMechanism is CK_MECHANISM: {CK_MECHANISM_TYPE mechanism; CK_VOID_PTR pParameter;
// CK_ULONG ulParameterLen}.
type ckMechanism struct {
	mechanism    ulong
	parameter    unsafe.Pointer
	parameterLen ulong
}

// ckGCMParams is CK_GCM_PARAMS: {CK_BYTE_PTR pIv; CK_ULONG ulIvLen; CK_ULONG ulIvBits;
// CK_BYTE_PTR pAAD; CK_ULONG ulAADLen; CK_ULONG ulTagBits}.
type ckGCMParams struct {
	iv      unsafe.Pointer
	ivLen   ulong
	ivBits  ulong
	aad     unsafe.Pointer
	aadLen  ulong
	tagBits ulong
}

// ckInitializeArgs is CK_C_INITIALIZE_ARGS: four mutex callbacks (none: the module uses the
// operating system's locking), CK_FLAGS flags, CK_VOID_PTR pReserved.
type ckInitializeArgs struct {
	createMutex, destroyMutex, lockMutex, unlockMutex unsafe.Pointer
	flags                                             ulong
	reserved                                          unsafe.Pointer
}

// tokenInfoSize is sizeof(CK_TOKEN_INFO): label[32], manufacturerID[32], model[16],
// serialNumber[16], flags and ten CK_ULONG counters, two CK_VERSIONs, utcTime[16], padded to
// 8. Only the label (first 32 bytes, blank-padded) is read; the buffer is made larger.
const tokenInfoSize = 208

// Attribute is one attribute of a template: its type and its value's bytes.
type Attribute struct {
	Type  uint64
	Value []byte
}

// Bool, Ulong and String make attributes of those value types.
func Bool(typ uint64, v bool) Attribute {
	b := byte(0)
	if v {
		b = 1
	}
	return Attribute{typ, []byte{b}}
}

func Ulong(typ uint64, v uint64) Attribute {
	return Attribute{typ, binary.NativeEndian.AppendUint64(nil, v)}
}

func String(typ uint64, v string) Attribute { return Attribute{typ, []byte(v)} }

// template encodes attributes as a CK_ATTRIBUTE array (nil for none).
func template(attrs []Attribute) []ckAttribute {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]ckAttribute, len(attrs))
	for i, a := range attrs {
		out[i] = ckAttribute{typ: a.Type, valueLen: ulong(len(a.Value))}
		if len(a.Value) > 0 {
			out[i].value = unsafe.Pointer(&a.Value[0])
		}
	}
	return out
}

// gcmMechanism encodes CKM_AES_GCM with its parameters.
func gcmMechanism(iv, aad []byte, tagBits int) *ckMechanism {
	p := &ckGCMParams{
		ivLen:   ulong(len(iv)),
		ivBits:  ulong(8 * len(iv)),
		aadLen:  ulong(len(aad)),
		tagBits: ulong(tagBits),
	}
	if len(iv) > 0 {
		p.iv = unsafe.Pointer(&iv[0])
	}
	if len(aad) > 0 {
		p.aad = unsafe.Pointer(&aad[0])
	}
	return &ckMechanism{mechanism: CKM_AES_GCM, parameter: unsafe.Pointer(p), parameterLen: ulong(unsafe.Sizeof(*p))}
}

// Module is a loaded PKCS#11 module.
type Module struct {
	Path  string
	funcs unsafe.Pointer // CK_FUNCTION_LIST_PTR (module memory)
}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Module{}
)

// Load loads the module at path (once per process: a module stays loaded) and reads its
// function list.
func Load(path string) (*Module, error) {
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if m, ok := loaded[path]; ok {
		return m, nil
	}
	getList, err := dlopen(path)
	if err != nil {
		return nil, err
	}
	var list unsafe.Pointer
	if rv := ccall(getList, uintptr(unsafe.Pointer(&list))); rv != CKR_OK {
		return nil, &Error{"C_GetFunctionList", uint64(rv)}
	}
	if list == nil {
		return nil, errors.New("pkcs11: C_GetFunctionList returned no list")
	}
	m := &Module{Path: path, funcs: list}
	loaded[path] = m
	return m, nil
}

// fn is the address of function i of the module's list.
func (m *Module) fn(i int) uintptr {
	return *(*uintptr)(unsafe.Add(m.funcs, 8+8*i))
}

// call calls function i; a CK_RV other than CKR_OK is an *Error naming it.
//
//go:uintptrescapes
func (m *Module) call(i int, args ...uintptr) error {
	if rv := ccall(m.fn(i), args...); rv != CKR_OK {
		return &Error{fnNames[i], uint64(rv)}
	}
	return nil
}

// Initialize initializes the library for this process (C_Initialize, with the operating
// system's locking). already is true when it was initialized before (by this process): then
// the caller must not finalize it.
func (m *Module) Initialize() (already bool, err error) {
	args := &ckInitializeArgs{flags: ckfOSLockingOK}
	err = m.call(fnInitialize, uintptr(unsafe.Pointer(args)))
	if errors.Is(err, &Error{RV: CKR_CRYPTOKI_ALREADY_INITIALIZED}) {
		return true, nil
	}
	return false, err
}

// Finalize ends the process's use of the library (C_Finalize).
func (m *Module) Finalize() error { return m.call(fnFinalize, 0) }

// Slots lists the slots that hold a token.
func (m *Module) Slots() ([]uint64, error) {
	for {
		var n ulong
		if err := m.call(fnGetSlotList, 1, 0, uintptr(unsafe.Pointer(&n))); err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		ids := make([]ulong, n)
		err := m.call(fnGetSlotList, 1, uintptr(unsafe.Pointer(&ids[0])), uintptr(unsafe.Pointer(&n)))
		if errors.Is(err, &Error{RV: CKR_BUFFER_TOO_SMALL}) {
			continue // a token appeared in between
		}
		if err != nil {
			return nil, err
		}
		return ids[:n], nil
	}
}

// TokenLabel is the label of the token in slot, without its blank padding.
func (m *Module) TokenLabel(slot uint64) (string, error) {
	info := make([]byte, 2*tokenInfoSize)
	if err := m.call(fnGetTokenInfo, uintptr(slot), uintptr(unsafe.Pointer(&info[0]))); err != nil {
		return "", err
	}
	return strings.TrimRight(string(info[:32]), " \x00"), nil
}

// Session is an open session with a token.
type Session struct {
	m *Module
	h ulong
}

// OpenSession opens a serial session with the token in slot, read-write when rw (needed to
// create a token object).
func (m *Module) OpenSession(slot uint64, rw bool) (*Session, error) {
	flags := uintptr(ckfSerialSession)
	if rw {
		flags |= ckfRWSession
	}
	s := &Session{m: m}
	if err := m.call(fnOpenSession, uintptr(slot), flags, 0, 0, uintptr(unsafe.Pointer(&s.h))); err != nil {
		return nil, err
	}
	return s, nil
}

// Close closes the session (C_CloseSession).
func (s *Session) Close() error { return s.m.call(fnCloseSession, uintptr(s.h)) }

// Login logs the normal user in with pin; a session already logged in (another session of
// this process logged in) is not an error.
func (s *Session) Login(pin []byte) error {
	var p unsafe.Pointer
	if len(pin) > 0 {
		p = unsafe.Pointer(&pin[0])
	}
	err := s.m.call(fnLogin, uintptr(s.h), ckuUser, uintptr(p), uintptr(len(pin)))
	if errors.Is(err, &Error{RV: CKR_USER_ALREADY_LOGGED_IN}) {
		return nil
	}
	return err
}

// Logout logs the user out (C_Logout).
func (s *Session) Logout() error { return s.m.call(fnLogout, uintptr(s.h)) }

// FindObjects returns the handles of up to max objects matching the template.
func (s *Session) FindObjects(attrs []Attribute, max int) ([]uint64, error) {
	if max < 1 {
		return nil, errors.New("pkcs11: FindObjects: max must be at least 1")
	}
	t := template(attrs)
	var tp unsafe.Pointer
	if len(t) > 0 {
		tp = unsafe.Pointer(&t[0])
	}
	if err := s.m.call(fnFindObjectsInit, uintptr(s.h), uintptr(tp), uintptr(len(t))); err != nil {
		return nil, err
	}
	handles := make([]ulong, max)
	var n ulong
	err := s.m.call(
		fnFindObjects,
		uintptr(s.h),
		uintptr(unsafe.Pointer(&handles[0])),
		uintptr(max),
		uintptr(unsafe.Pointer(&n)),
	)
	if ferr := s.m.call(fnFindObjectsFinal, uintptr(s.h)); err == nil {
		err = ferr
	}
	if err != nil {
		return nil, err
	}
	return handles[:n], nil
}

// Attribute reads one attribute of an object (C_GetAttributeValue), at most max bytes.
func (s *Session) Attribute(obj uint64, typ uint64, max int) ([]byte, error) {
	buf := make([]byte, max)
	t := []ckAttribute{{typ: typ, value: unsafe.Pointer(&buf[0]), valueLen: ulong(max)}}
	if err := s.m.call(fnGetAttributeValue, uintptr(s.h), uintptr(obj), uintptr(unsafe.Pointer(&t[0])), 1); err != nil {
		return nil, err
	}
	return buf[:t[0].valueLen], nil
}

// GenerateKey generates a secret key by mechanism mech (no parameters) with the template's
// attributes, and returns its handle.
func (s *Session) GenerateKey(mech uint64, attrs []Attribute) (uint64, error) {
	t := template(attrs)
	mp := &ckMechanism{mechanism: mech}
	var h ulong
	if err := s.m.call(fnGenerateKey, uintptr(s.h), uintptr(unsafe.Pointer(mp)), uintptr(unsafe.Pointer(&t[0])), uintptr(len(t)), uintptr(unsafe.Pointer(&h))); err != nil {
		return 0, err
	}
	return h, nil
}

// EncryptGCM encrypts plaintext with the AES key by CKM_AES_GCM: the given IV, additional data
// aad and a 128-bit tag; it returns the ciphertext followed by the tag.
func (s *Session) EncryptGCM(key uint64, iv, aad, plaintext []byte) ([]byte, error) {
	if len(plaintext) == 0 {
		return nil, errors.New("pkcs11: EncryptGCM: nothing to encrypt")
	}
	mech := gcmMechanism(iv, aad, 128)
	if err := s.m.call(fnEncryptInit, uintptr(s.h), uintptr(unsafe.Pointer(mech)), uintptr(key)); err != nil {
		return nil, err
	}
	out := make([]byte, len(plaintext)+16)
	n := ulong(len(out))
	if err := s.m.call(fnEncrypt, uintptr(s.h), uintptr(unsafe.Pointer(&plaintext[0])), uintptr(len(plaintext)),
		uintptr(unsafe.Pointer(&out[0])), uintptr(unsafe.Pointer(&n))); err != nil {
		return nil, err
	}
	return out[:n], nil
}

// DecryptGCM is the reverse of EncryptGCM: it decrypts ciphertext (with its tag) into out and
// returns the plaintext's length. A wrong key, IV, additional data or a changed ciphertext fails
// (CKR_ENCRYPTED_DATA_INVALID for SoftHSM). out must hold len(ciphertext) bytes: some modules
// ask for room for the tag too.
func (s *Session) DecryptGCM(key uint64, iv, aad, ciphertext, out []byte) (int, error) {
	if len(ciphertext) == 0 || len(out) < len(ciphertext) {
		return 0, errors.New("pkcs11: DecryptGCM: the output buffer must be as long as the ciphertext")
	}
	mech := gcmMechanism(iv, aad, 128)
	if err := s.m.call(fnDecryptInit, uintptr(s.h), uintptr(unsafe.Pointer(mech)), uintptr(key)); err != nil {
		return 0, err
	}
	n := ulong(len(out))
	if err := s.m.call(fnDecrypt, uintptr(s.h), uintptr(unsafe.Pointer(&ciphertext[0])), uintptr(len(ciphertext)),
		uintptr(unsafe.Pointer(&out[0])), uintptr(unsafe.Pointer(&n))); err != nil {
		return 0, err
	}
	return int(n), nil
}
