package organizations

import (
	"strconv"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
)

// Limits per request (docs/limits.md §8.2), checked before any item of a list is looked up,
// verified or written: each item costs a store read or write, a key decompression or a passkey
// attestation check, so a request's cost must not grow with a list its body makes long for a few
// bytes an item. Each is at least what Turnkey lets an organization or a user hold
// (docs.turnkey.com, "Resource limits": 100 users, 100 tags and 100 invitations an organization;
// 10 authenticators, 10 long-lived and 10 expiring API keys, 10 OAuth providers a user), so no
// request Turnkey would carry out is refused; an operator who raised --limits above them splits
// a larger batch into requests.
const (
	// MaxUsersPerRequest bounds the users create_users and create_api_only_users create, the
	// root users of create_sub_organization, and the members of update_root_quorum.
	MaxUsersPerRequest = 100
	// MaxAPIKeysPerRequest bounds the API keys one request registers for one user.
	MaxAPIKeysPerRequest = 32
	// MaxAuthenticatorsPerRequest bounds the passkeys one request registers for one user (each
	// is an attestation to parse and, for packed self attestation, a signature to check).
	MaxAuthenticatorsPerRequest = 32
	// MaxOAuthProvidersPerRequest bounds the OIDC identities one request links to one user
	// (each may be an id_token to verify).
	MaxOAuthProvidersPerRequest = 32
	// MaxTransportsPerAuthenticator bounds a passkey's transports (WebAuthn names seven: usb,
	// nfc, ble, smart-card, hybrid, internal and the older cable); they are stored with it.
	MaxTransportsPerAuthenticator = 16
	// MaxTagsPerRequest bounds the user tags one user is given in one request (userTags,
	// userTagIds, receiverUserTags).
	MaxTagsPerRequest = 100
	// MaxIDsPerRequest bounds the ids a delete or a membership change lists (users, user tags,
	// API keys, authenticators, OAuth providers, secrets).
	MaxIDsPerRequest = 1000
	// MaxInvitationsPerRequest bounds the invitations create_invitations makes.
	MaxInvitationsPerRequest = 100
)

// CheckCount refuses a list of n items longer than limit, before any of them is looked at.
func CheckCount(field string, n, limit int, what string) error {
	if n > limit {
		return apierr.Invalid(field, "%d %s, at most %d in one request", n, what, limit)
	}
	return nil
}

// CheckIDs refuses a list of ids longer than limit or naming one id twice (which would be
// looked up, and written, once per mention), in one pass.
func CheckIDs(field string, ids []string, limit int, what string) error {
	if err := CheckCount(field, len(ids), limit, what); err != nil {
		return err
	}
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if seen[id] {
			return apierr.Invalid(field+"["+strconv.Itoa(i)+"]", "%s is listed twice", id)
		}
		seen[id] = true
	}
	return nil
}

// CheckUserSpecs checks the counts of users to create (field names their list) and of each
// one's credentials and tags, before any of them is created.
func CheckUserSpecs(field string, specs []directory.UserSpec) error {
	if err := CheckCount(field, len(specs), MaxUsersPerRequest, "users"); err != nil {
		return err
	}
	for _, s := range specs {
		if err := CheckCount(s.Field+".apiKeys", len(s.APIKeys), MaxAPIKeysPerRequest, "API keys"); err != nil {
			return err
		}
		if err := CheckAuthenticators(s.Field+".authenticators", s.Authenticators); err != nil {
			return err
		}
		if err := CheckCount(
			s.Field+".oauthProviders", len(s.OAuthProviders), MaxOAuthProvidersPerRequest, "OAuth providers",
		); err != nil {
			return err
		}
		if err := CheckIDs(s.Field+".userTags", s.TagIDs, MaxTagsPerRequest, "user tags"); err != nil {
			return err
		}
	}
	return nil
}

// CheckAuthenticators checks the count of passkeys to register for one user and of each one's
// transports.
func CheckAuthenticators(field string, as []directory.AuthenticatorSpec) error {
	if err := CheckCount(field, len(as), MaxAuthenticatorsPerRequest, "authenticators"); err != nil {
		return err
	}
	for i, a := range as {
		f := a.Field
		if f == "" {
			f = field + "[" + strconv.Itoa(i) + "]"
		}
		n := len(a.Attestation.Transports)
		if err := CheckCount(f+".attestation.transports", n, MaxTransportsPerAuthenticator, "transports"); err != nil {
			return err
		}
	}
	return nil
}
