package pkcs11

import "fmt"

// ulong is CK_ULONG (and every type defined as it: CK_RV, CK_SLOT_ID, CK_OBJECT_HANDLE,
// CK_ATTRIBUTE_TYPE, CK_MECHANISM_TYPE…) on the supported platforms.
type ulong = uint64

// Object classes, key types, attributes, mechanisms and flags used here (PKCS#11 v2.40 base
// specification, values from its header definitions).
const (
	CKO_SECRET_KEY = 0x4
	CKK_AES        = 0x1f

	CKA_CLASS       = 0x0
	CKA_TOKEN       = 0x1
	CKA_PRIVATE     = 0x2
	CKA_LABEL       = 0x3
	CKA_VALUE       = 0x11
	CKA_KEY_TYPE    = 0x100
	CKA_ID          = 0x102
	CKA_SENSITIVE   = 0x103
	CKA_ENCRYPT     = 0x104
	CKA_DECRYPT     = 0x105
	CKA_VALUE_LEN   = 0x161
	CKA_EXTRACTABLE = 0x162

	CKM_AES_KEY_GEN = 0x1080
	CKM_AES_GCM     = 0x1087

	ckfRWSession     = 0x2
	ckfSerialSession = 0x4
	ckfOSLockingOK   = 0x2
	ckuUser          = 1
)

// Return values (CK_RV) that callers test for.
const (
	CKR_OK                           = 0x0
	CKR_SLOT_ID_INVALID              = 0x3
	CKR_ENCRYPTED_DATA_INVALID       = 0x40
	CKR_PIN_INCORRECT                = 0xa0
	CKR_PIN_LOCKED                   = 0xa4
	CKR_USER_ALREADY_LOGGED_IN       = 0x100
	CKR_BUFFER_TOO_SMALL             = 0x150
	CKR_CRYPTOKI_ALREADY_INITIALIZED = 0x191
)

var rvNames = map[uint64]string{
	0x0: "CKR_OK", 0x1: "CKR_CANCEL", 0x2: "CKR_HOST_MEMORY", 0x3: "CKR_SLOT_ID_INVALID",
	0x5: "CKR_GENERAL_ERROR", 0x6: "CKR_FUNCTION_FAILED", 0x7: "CKR_ARGUMENTS_BAD",
	0x12: "CKR_ATTRIBUTE_TYPE_INVALID", 0x13: "CKR_ATTRIBUTE_VALUE_INVALID",
	0x20: "CKR_DATA_INVALID", 0x21: "CKR_DATA_LEN_RANGE",
	0x30: "CKR_DEVICE_ERROR", 0x31: "CKR_DEVICE_MEMORY", 0x32: "CKR_DEVICE_REMOVED",
	0x40: "CKR_ENCRYPTED_DATA_INVALID", 0x41: "CKR_ENCRYPTED_DATA_LEN_RANGE",
	0x54: "CKR_FUNCTION_NOT_SUPPORTED",
	0x60: "CKR_KEY_HANDLE_INVALID", 0x62: "CKR_KEY_SIZE_RANGE", 0x63: "CKR_KEY_TYPE_INCONSISTENT",
	0x68: "CKR_KEY_FUNCTION_NOT_PERMITTED",
	0x70: "CKR_MECHANISM_INVALID", 0x71: "CKR_MECHANISM_PARAM_INVALID",
	0x82: "CKR_OBJECT_HANDLE_INVALID", 0x90: "CKR_OPERATION_ACTIVE", 0x91: "CKR_OPERATION_NOT_INITIALIZED",
	0xa0: "CKR_PIN_INCORRECT", 0xa1: "CKR_PIN_INVALID", 0xa2: "CKR_PIN_LEN_RANGE", 0xa3: "CKR_PIN_EXPIRED",
	0xa4: "CKR_PIN_LOCKED",
	0xb0: "CKR_SESSION_CLOSED", 0xb1: "CKR_SESSION_COUNT", 0xb3: "CKR_SESSION_HANDLE_INVALID",
	0xb4: "CKR_SESSION_PARALLEL_NOT_SUPPORTED", 0xb5: "CKR_SESSION_READ_ONLY",
	0xd0: "CKR_TEMPLATE_INCOMPLETE", 0xd1: "CKR_TEMPLATE_INCONSISTENT",
	0xe0: "CKR_TOKEN_NOT_PRESENT", 0xe1: "CKR_TOKEN_NOT_RECOGNIZED", 0xe2: "CKR_TOKEN_WRITE_PROTECTED",
	0x100: "CKR_USER_ALREADY_LOGGED_IN", 0x101: "CKR_USER_NOT_LOGGED_IN", 0x102: "CKR_USER_PIN_NOT_INITIALIZED",
	0x103: "CKR_USER_TYPE_INVALID",
	0x150: "CKR_BUFFER_TOO_SMALL", 0x190: "CKR_CRYPTOKI_NOT_INITIALIZED",
	0x191: "CKR_CRYPTOKI_ALREADY_INITIALIZED",
}

// Error is a failed call: the function's name and its CK_RV.
type Error struct {
	Func string
	RV   uint64
}

func (e *Error) Error() string {
	name, ok := rvNames[e.RV]
	if !ok {
		name = fmt.Sprintf("CKR 0x%x", e.RV)
	}
	return fmt.Sprintf("pkcs11: %s: %s", e.Func, name)
}

// Is makes errors.Is(err, &Error{RV: code}) match on the code alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.RV == e.RV && (t.Func == "" || t.Func == e.Func)
}
