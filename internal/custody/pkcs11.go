package custody

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
)

// SealPKCS11 keeps the master key wrapped by an AES key on a PKCS#11 token (an HSM, a smart
// card, SoftHSM2): docs/operations.md, "Production custody".
const SealPKCS11 = "pkcs11"

// PKCS11 wraps and unwraps the master key with an AES-256 key that lives on a PKCS#11 token and
// never leaves it, by CKM_AES_GCM: a random 12-byte IV per wrap, stored beside the ciphertext,
// and additional data that binds the ciphertext to Latchkey's seal (pkcs11AAD). The seal record
// holds "pkcs11:v1:" + base64(IV ‖ ciphertext ‖ tag); the plain master key exists only in this
// process's memory.
//
// GCM through C_Encrypt/C_Decrypt rather than CKM_AES_KEY_WRAP_PAD through C_WrapKey: wrapping
// would first put the master key on the token as a session object (C_CreateObject), and
// unwrapping would create it there again and read it back, which needs an extractable,
// non-sensitive object; GCM keeps the master key off the token, authenticates the additional
// data, and needs only the encrypt/decrypt permissions on the token's key.
//
// The module is loaded at run time, which a static binary cannot do: the seal exists only in a
// build with the pkcs11 tag (PKCS11Supported); elsewhere Check refuses it.
type PKCS11 struct {
	Module     string // absolute path of the token's PKCS#11 module (.so)
	TokenLabel string // the token's label; or
	Slot       string // the slot's ID, decimal (when the label is not unique)
	KeyLabel   string // CKA_LABEL of the AES key that wraps the master key
	PIN        string // the user PIN: a secret, from the environment or a file only
	// CreateKey generates the AES key on the token (sensitive, not extractable) when a new
	// deployment finds none (latchkey init --pkcs11-create-key).
	CreateKey bool
}

// errNoPKCS11 refuses --seal pkcs11 in a build without PKCS#11 support.
var errNoPKCS11 = errors.New(
	"--seal pkcs11: this latchkey was built without PKCS#11 support (the release binary is static and cannot load a module): build it with -tags pkcs11 (docs/operations.md, \"Production custody\")",
)

// Type is SealPKCS11.
func (PKCS11) Type() string { return SealPKCS11 }

// Locate records the token (its label or slot), the module's path and the key's label.
func (p PKCS11) Locate(rec *SealRecord) {
	rec.Addr, rec.Mount, rec.Key = p.token(), p.Module, p.KeyLabel
}

// token names the token in messages.
func (p PKCS11) token() string {
	if p.TokenLabel != "" {
		return "token " + strconv.Quote(p.TokenLabel)
	}
	return "slot " + p.Slot
}

// Check refuses an incomplete configuration (and any in a build without PKCS#11 support)
// without loading the module.
func (p PKCS11) Check() error {
	if !PKCS11Supported {
		return errNoPKCS11
	}
	if p.Module == "" {
		return errors.New(
			"--pkcs11-module is required: the path of the token's PKCS#11 module (SoftHSM2: /usr/lib/softhsm/libsofthsm2.so)",
		)
	}
	if !filepath.IsAbs(p.Module) {
		return fmt.Errorf(
			"--pkcs11-module %q must be an absolute path (a bare name would be searched for in the library path)",
			p.Module,
		)
	}
	switch {
	case p.TokenLabel == "" && p.Slot == "":
		return errors.New("--pkcs11-token-label (or --pkcs11-slot) is required: the token that holds the wrapping key")
	case p.TokenLabel != "" && p.Slot != "":
		return errors.New("give --pkcs11-token-label or --pkcs11-slot, not both")
	}
	if p.Slot != "" {
		if _, err := strconv.ParseUint(p.Slot, 10, 64); err != nil {
			return fmt.Errorf("--pkcs11-slot %q is not a slot ID (a decimal number)", p.Slot)
		}
	}
	if p.KeyLabel == "" {
		return errors.New(
			"--pkcs11-key-label is required: the label of the AES key on the token that wraps the master key",
		)
	}
	if p.PIN == "" {
		return errors.New(
			"the PKCS#11 user PIN is required: give it in LATCHKEY_PKCS11_PIN or a file named by LATCHKEY_PKCS11_PIN_FILE",
		)
	}
	return nil
}
