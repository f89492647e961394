//go:build (linux || darwin) && (amd64 || arm64)

package pkcs11

import (
	"fmt"

	"github.com/ebitengine/purego"
)

// supported: CK_ULONG is 8 bytes and the structures below have the C layout on these platforms.
const supported = true

// dlopen loads the module and returns C_GetFunctionList's address.
func dlopen(path string) (uintptr, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, fmt.Errorf("pkcs11: loading module %q: %v", path, err)
	}
	fn, err := purego.Dlsym(h, "C_GetFunctionList")
	if err != nil {
		return 0, fmt.Errorf("pkcs11: module %q has no C_GetFunctionList: %v", path, err)
	}
	return fn, nil
}

// dlsym is the address of a symbol the module exports (tests compare it with the function list).
func dlsym(path, name string) (uintptr, error) {
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return 0, err
	}
	return purego.Dlsym(h, name)
}

// ccall calls the C function fn. Every argument that points at Go memory must be written
// uintptr(unsafe.Pointer(p)) in the call expression: uintptrescapes moves p to the heap and
// keeps it alive until ccall returns.
//
//go:uintptrescapes
func ccall(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
