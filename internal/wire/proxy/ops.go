package proxy

import (
	"github.com/latchkey/latchkey/internal/wire"
)

// Op is one Auth Proxy operation: POST /v1/<Path>.
type Op struct {
	Path        string // e.g. "otp_init"
	Route       string // e.g. "/v1/otp_init"
	Summary     string
	NewRequest  func() wire.Validator // a new request body
	NewResponse func() any            // a new 200 response body
}

// Lookup finds the operation at path (e.g. "otp_init").
func Lookup(path string) (*Op, bool) {
	for i := range Ops {
		if Ops[i].Path == path {
			return &Ops[i], true
		}
	}
	return nil, false
}
