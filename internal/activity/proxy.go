package activity

import (
	"slices"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
)

// The auth proxy's key (directory.CredentialAuthProxy) may submit exactly these activities and
// run exactly these queries: sign-up, the one-time-code and OAuth logins, the look-up of a
// user's sub-organization, and the list of OAuth 2.0 credentials (client ids, secrets only
// encrypted) that oauth2_authenticate names. Everything else it stamps is refused here, before any policy, quorum
// or handler is consulted, so no policy an operator writes can widen it: the proxy can never
// sign, export, or change anything but by creating a sub-organization and logging its users
// in.
var (
	ProxySubmitPaths = []string{
		"create_sub_organization",
		"init_otp",
		"verify_otp",
		"otp_login",
		"oauth2_authenticate",
		"oauth_login",
	}
	ProxyQueryPaths = []string{"list_suborgs", "list_verified_suborgs", "list_oauth2_credentials"}
)

// proxyRefusal refuses a request stamped by an auth proxy key for a path not on its list.
func proxyRefusal(c *directory.Caller, submit bool, path string) error {
	if c == nil || c.CredentialType != directory.CredentialAuthProxy {
		return nil
	}
	allowed := ProxyQueryPaths
	if submit {
		allowed = ProxySubmitPaths
	}
	if slices.Contains(allowed, path) {
		return nil
	}
	return apierr.New(
		apierr.PermissionDenied,
		"POLICY_DENIED",
		"request not authorized: the auth proxy key may only sign up and log in users (%s is not one of its operations)",
		path,
	)
}

// isProxy reports whether the caller is an auth proxy key (whose allowed activities are allowed
// without the root quorum or a policy: enabling the proxy is the operator's grant of them).
func isProxy(c *directory.Caller) bool {
	return c != nil && c.CredentialType == directory.CredentialAuthProxy
}
