//go:build !((linux || darwin) && (amd64 || arm64))

package pkcs11

import (
	"errors"
	"runtime"
)

const supported = false

var errUnsupported = errors.New("pkcs11: not supported on " + runtime.GOOS + "/" + runtime.GOARCH)

func dlopen(string) (uintptr, error)        { return 0, errUnsupported }
func dlsym(string, string) (uintptr, error) { return 0, errUnsupported }
func ccall(uintptr, ...uintptr) uintptr     { panic(errUnsupported) }
