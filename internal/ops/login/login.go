package login

import (
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/ops/profiles"
	"github.com/latchkey/latchkey/internal/session"
)

// Session lifetimes in seconds.
const (
	DefaultSessionSeconds = 900
	MaxSessionSeconds     = 365 * 24 * 3600
)

// keyTypes are the credential types of login session keys, which invalidateExisting removes.
var keyTypes = map[string]bool{
	directory.CredentialOTPAuth:   true,
	directory.CredentialOAuth:     true,
	directory.CredentialLogin:     true,
	directory.CredentialEmailAuth: true,
}

// Spec is one session to issue.
type Spec struct {
	// PublicKey is the client's P-256 session public key (compressed or uncompressed hex).
	PublicKey string
	// Seconds is the session lifetime (already validated by the caller).
	Seconds int64
	// CredentialType is the API key's credential type (directory.CredentialOTPAuth, …).
	CredentialType string
	// Name prefixes the API key's name, e.g. "OTP Login".
	Name string
	// InvalidateExisting removes the user's earlier login session keys.
	InvalidateExisting bool
	// Field names the intent's parameters for error messages ("parameters").
	Field string
	// ExactName uses Name as given instead of adding the time.
	ExactName bool
	// SessionProfileID binds the key to a session profile (of the organization or its parent):
	// the profile's scope then limits what the session may do, and its expiration bounds the
	// session's.
	SessionProfileID string
}

// RegisterKey registers s's public key as an API key of u that expires after s.Seconds (first
// removing u's earlier login keys when s.InvalidateExisting).
func RegisterKey(x *activity.Exec, env directory.Env, u *directory.User, s Spec) (*directory.APIKey, error) {
	if s.InvalidateExisting {
		keys, err := directory.UserAPIKeys(x.Ctx, x.Tx, u.ID)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if keyTypes[k.CredentialType] {
				if err := directory.Delete(x.Ctx, x.Tx, directory.KindAPIKey, k.ID); err != nil {
					return nil, err
				}
			}
		}
	}
	field := s.Field
	if field == "" {
		field = "parameters"
	}
	var profile *profiles.Profile
	if s.SessionProfileID != "" {
		var err error
		if profile, err = profiles.Find(x.Ctx, x.Tx, x.OrgID, s.SessionProfileID); err != nil {
			if apierr.From(err).Code == apierr.NotFound {
				return nil, apierr.NotFoundf(
					"%s.sessionProfileId: session profile not found: %s",
					field,
					s.SessionProfileID,
				)
			}
			return nil, err
		}
		if max, err := strconv.ParseInt(profile.ExpirationSeconds, 10, 64); err == nil && max > 0 && max < s.Seconds {
			s.Seconds = max
		}
	}
	name := s.Name + " - " + x.Now.Format(time.RFC3339)
	if s.ExactName {
		name = s.Name
	}
	k, err := directory.CreateAPIKey(x.Ctx, x.Tx, env, u, directory.APIKeySpec{
		Name: name, PublicKey: s.PublicKey, Curve: "API_KEY_CURVE_P256",
		ExpirationSeconds: strconv.FormatInt(s.Seconds, 10), CredentialType: s.CredentialType, Field: field,
	})
	if err != nil || profile == nil {
		return k, err
	}
	k.SessionProfileID = profile.ID
	return k, directory.SaveAPIKey(x.Ctx, x.Tx, k)
}

// Issue registers the session key of u and returns the signed session JWT.
func Issue(x *activity.Exec, env directory.Env, u *directory.User, s Spec) (string, error) {
	k, err := RegisterKey(x, env, u, s)
	if err != nil {
		return "", err
	}
	tok, err := session.Encode(
		session.Claims{Exp: k.ExpiresAt.Unix(), PublicKey: k.PublicKey, SessionType: session.ReadWrite, UserID: u.ID,
			OrganizationID: x.OrgID},
		func(dg []byte) ([]byte, error) { return x.Services.ServerKeys.SignDigestRaw(custody.Notarizer, dg) },
	)
	if err != nil {
		return "", apierr.Internalf(err, "signing the session")
	}
	return tok, nil
}

// DefaultCredentialSeconds is the lifetime of a credential bundle's key when none is asked.
const DefaultCredentialSeconds = 900

// Bundle makes a fresh P-256 API key of u whose private half leaves custody only encrypted to
// target as a credential bundle (docs/wire.md §3.4), registers it with RegisterKey (credType,
// expiring; name "" picks one from credType) and returns it with the bundle. otp_auth, oauth,
// email_auth and the e-mail recovery answer with such bundles.
func Bundle(
	x *activity.Exec,
	env directory.Env,
	u *directory.User,
	target, name, expiration, credType string,
	invalidate bool,
) (*directory.APIKey, string, error) {
	secs, err := Seconds("parameters.expirationSeconds", expiration, DefaultCredentialSeconds, MaxSessionSeconds)
	if err != nil {
		return nil, "", err
	}
	pub, bundle, err := custody.NewSessionCredential(target)
	if err != nil {
		return nil, "", apierr.Invalid("parameters.targetPublicKey", "must be a P-256 public key in hex: %v", err)
	}
	exact := strings.TrimSpace(name) != ""
	if !exact {
		name = map[string]string{directory.CredentialOTPAuth: "OTP Auth", directory.CredentialEmailAuth: "Email Auth",
			directory.CredentialRecoverUser: "Recovery", directory.CredentialOAuth: "OAuth"}[credType]
	}
	k, err := RegisterKey(
		x,
		env,
		u,
		Spec{PublicKey: pub, Seconds: secs, CredentialType: credType, Name: name, ExactName: exact,
			InvalidateExisting: invalidate},
	)
	return k, bundle, err
}

// Seconds reads an expirationSeconds string (empty: def), a whole number between 1 and max.
// Every lifetime a request gives (sessions, credentials, codes, tokens) is read with it.
func Seconds(field, s string, def, max int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > max {
		return 0, apierr.Invalid(field, "must be a whole number of seconds between 1 and %d, got %q", max, s)
	}
	return n, nil
}
