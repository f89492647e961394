//go:build !pkcs11

package custody

import "context"

// PKCS11Supported reports whether this build can load a PKCS#11 module (the pkcs11 build tag).
const PKCS11Supported = false

// Wrap is refused: this build has no PKCS#11 support.
func (PKCS11) Wrap(context.Context, *MasterKey) (string, error) { return "", errNoPKCS11 }

// Unwrap is refused: this build has no PKCS#11 support.
func (PKCS11) Unwrap(context.Context, string) (*MasterKey, error) { return nil, errNoPKCS11 }
