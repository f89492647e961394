// Package pkcs11 is a minimal PKCS#11 (Cryptoki, v2.40) client: it loads a token's module (a
// shared library) at run time without cgo, through purego, and makes the few calls Latchkey's
// pkcs11 seal needs: find a token by label or slot, log in with the user PIN, find or generate
// an AES key, and encrypt or decrypt with CKM_AES_GCM.
//
// It is written from the PKCS#11 v2.40 base specification for 64-bit Unix (CK_ULONG is the C
// unsigned long, 8 bytes; structures are not packed; the module's functions are taken from the
// CK_FUNCTION_LIST that C_GetFunctionList returns, by their order in that list). On other
// platforms Load reports that PKCS#11 is unsupported.
//
// Every structure handed to the module is a Go value whose pointer fields are real pointers:
// the value is passed to purego.SyscallN as uintptr(unsafe.Pointer(…)) in the call expression,
// which moves it to the heap and keeps it alive for the call, and what its fields point at
// escapes with it (the garbage collector never moves heap objects). Errors name the function
// and its CKR_ code, never an argument (a PIN or plaintext).
package pkcs11
