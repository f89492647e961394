package directory

import (
	"context"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// MaxNameLength bounds every name (users, tags, keys, organizations).
const MaxNameLength = 256

// Limits are the per-organization and per-user resource limits. The defaults are Turnkey's
// documented ones; a self-hosting operator may raise them (serve --limits).
type Limits struct {
	UsersPerOrg           int
	UserTagsPerOrg        int
	APIKeysPerUser        int // long-lived
	ExpiringKeysPerUser   int
	AuthenticatorsPerUser int
	PoliciesPerOrg        int
	// PrivateKeyTagsPerOrg bounds an organization's private key tags. Turnkey documents one
	// limit on tags (100), which the user tags keep too; list_private_key_tags answers them all.
	PrivateKeyTagsPerOrg int
	// ContractInterfacesPerOrg bounds an organization's smart contract interfaces (each up to
	// 400 KiB), which list_smart_contract_interfaces answers whole. Turnkey documents none.
	ContractInterfacesPerOrg int
}

// DefaultLimits are Turnkey's documented limits (and Latchkey's own where Turnkey documents
// none).
var DefaultLimits = Limits{
	UsersPerOrg:           100,
	UserTagsPerOrg:        100,
	APIKeysPerUser:        10,
	ExpiringKeysPerUser:   10,
	AuthenticatorsPerUser: 10,
	PoliciesPerOrg:        100,
	PrivateKeyTagsPerOrg:  100,
	// Latchkey's own: an organization keeps an interface per contract its policies decode, and
	// the list answers every one.
	ContractInterfacesPerOrg: 100,
}

// Check refuses one more record of kind in orgID when it already has limit of them (what names
// them in the message). A limit <= 0 means unlimited and costs nothing; otherwise the count stops
// at the limit, so the check's cost does not grow with the number of records.
func (l Limits) Check(ctx context.Context, r store.Reader, kind, orgID string, limit int, what string) error {
	if limit <= 0 {
		return nil
	}
	n, err := r.Count(ctx, kind, orgID, limit)
	if err != nil {
		return apierr.Internalf(err, "counting %s", what)
	}
	if n >= limit {
		return apierr.New(
			apierr.ResourceExhausted,
			"RESOURCE_EXHAUSTED",
			"an organization can have at most %d %s",
			limit,
			what,
		)
	}
	return nil
}

// LimitNames maps the names used on the command line to the fields of Limits.
func (l *Limits) LimitNames() map[string]*int {
	return map[string]*int{
		"users":                      &l.UsersPerOrg,
		"user-tags":                  &l.UserTagsPerOrg,
		"api-keys-per-user":          &l.APIKeysPerUser,
		"expiring-api-keys-per-user": &l.ExpiringKeysPerUser,
		"authenticators-per-user":    &l.AuthenticatorsPerUser,
		"policies":                   &l.PoliciesPerOrg,
		"private-key-tags":           &l.PrivateKeyTagsPerOrg,
		"smart-contract-interfaces":  &l.ContractInterfacesPerOrg,
	}
}

// Contact is an e-mail address or a phone number someone proved to own (with a one-time code).
type Contact struct{ Email, Phone string }

// UserSpec is a user to create, normalised from every version of the create-user parameters.
type UserSpec struct {
	Name           string
	Email          string
	PhoneNumber    string
	APIKeys        []APIKeySpec
	Authenticators []AuthenticatorSpec
	OAuthProviders []OAuthSpec
	TagIDs         []string
	Field          string // where it came from in the request, for error messages
	// EmailUnproven and PhoneUnproven: see User.
	EmailUnproven, PhoneUnproven bool
}

// APIKeySpec is an API key to register.
type APIKeySpec struct {
	Name              string
	PublicKey         string
	Curve             string // API_KEY_CURVE_*; "" means P-256 (older versions have no curve)
	ExpirationSeconds string
	CredentialType    string // "" means the long-lived type of the curve
	Field             string
}

// AuthenticatorSpec is a passkey to register.
type AuthenticatorSpec struct {
	Name        string
	Challenge   string
	Attestation stamp.Attestation
	Field       string
}

// OAuthSpec links an OIDC identity.
type OAuthSpec struct {
	Name     string
	Issuer   string
	Subject  string
	Audience string
	Token    string // an id_token to verify instead of claims
	Field    string
}

// Env carries what credential registration needs from the server configuration.
type Env struct {
	Now      time.Time
	WebAuthn stamp.WebAuthnPolicy
	Limits   Limits
	// VerifyOIDC verifies id_tokens (nil: tokens are refused as not supported).
	VerifyOIDC VerifyOIDC
}

// OIDCIdentity is who a verified id_token names.
type OIDCIdentity struct {
	Issuer, Subject, Audience, Email string
	EmailVerified                    bool
}

// VerifyOIDC checks an id_token's signature (through its issuer's published keys), that the
// issuer is trusted, its times and, when nonce is not empty, its nonce.
type VerifyOIDC func(ctx context.Context, token, nonce string) (*OIDCIdentity, error)

// CreateUser creates a user with its credentials in org.
func CreateUser(ctx context.Context, tx store.Tx, env Env, orgID string, spec UserSpec) (*User, error) {
	if err := checkName(spec.Field+".userName", spec.Name); err != nil {
		return nil, err
	}
	if spec.Email != "" {
		if err := CheckEmail(spec.Field+".userEmail", spec.Email); err != nil {
			return nil, err
		}
	}
	if spec.PhoneNumber != "" && !ValidE164(spec.PhoneNumber) {
		return nil, apierr.Invalid(spec.Field+".userPhoneNumber", "must be in E.164 format (e.g. +13214567890)")
	}
	if err := env.Limits.Check(ctx, tx, KindUser, orgID, env.Limits.UsersPerOrg, "users"); err != nil {
		return nil, err
	}
	u := &User{ID: id.New(), OrgID: orgID, Name: spec.Name, Email: spec.Email, PhoneNumber: spec.PhoneNumber,
		EmailUnproven: spec.Email != "" &&
			spec.EmailUnproven, PhoneUnproven: spec.PhoneNumber != "" && spec.PhoneUnproven,
		CreatedAt: env.Now, UpdatedAt: env.Now}
	if err := SaveUser(ctx, tx, u); err != nil {
		return nil, err
	}
	for _, k := range spec.APIKeys {
		if _, err := CreateAPIKey(ctx, tx, env, u, k); err != nil {
			return nil, err
		}
	}
	for _, a := range spec.Authenticators {
		if _, err := CreateAuthenticator(ctx, tx, env, u, a); err != nil {
			return nil, err
		}
	}
	for _, p := range spec.OAuthProviders {
		if _, err := CreateOAuthProvider(ctx, tx, env, u, p); err != nil {
			return nil, err
		}
	}
	for i, tagID := range spec.TagIDs {
		t, err := LoadUserTag(ctx, tx, orgID, tagID)
		if err != nil {
			return nil, apierr.Invalid(
				spec.Field+".userTags["+strconv.Itoa(i)+"]",
				"no user tag %s in this organization",
				tagID,
			)
		}
		t.UserIDs = append(t.UserIDs, u.ID)
		t.UpdatedAt = env.Now
		if err := SaveUserTag(ctx, tx, t); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// CreateAPIKey registers an API key for u.
func CreateAPIKey(ctx context.Context, tx store.Tx, env Env, u *User, spec APIKeySpec) (*APIKey, error) {
	if err := checkName(spec.Field+".apiKeyName", spec.Name); err != nil {
		return nil, err
	}
	curve := spec.Curve
	if curve == "" {
		curve = "API_KEY_CURVE_P256"
	}
	pub, err := NormalizePublicKey(curve, spec.PublicKey)
	if err != nil {
		return nil, apierr.Invalid(spec.Field+".publicKey", "%v", err)
	}
	k := &APIKey{ID: id.New(), OrgID: u.OrgID, UserID: u.ID, Name: spec.Name, PublicKey: pub, Curve: curve,
		CredentialType: spec.CredentialType, CreatedAt: env.Now, UpdatedAt: env.Now}
	if k.CredentialType == "" {
		k.CredentialType = CredentialTypeForCurve(curve)
	}
	if spec.ExpirationSeconds != "" {
		secs, err := strconv.ParseInt(spec.ExpirationSeconds, 10, 64)
		if err != nil || secs <= 0 || secs > 10*365*24*3600 {
			return nil, apierr.Invalid(
				spec.Field+".expirationSeconds",
				"must be a positive number of seconds, got %q",
				spec.ExpirationSeconds,
			)
		}
		k.ExpirationSeconds = spec.ExpirationSeconds
		k.ExpiresAt = env.Now.Add(time.Duration(secs) * time.Second)
	}
	if err := enforceKeyLimits(ctx, tx, env, u.ID, k); err != nil {
		return nil, err
	}
	if err := SaveAPIKey(ctx, tx, k); err != nil {
		return nil, err
	}
	return k, nil
}

// enforceKeyLimits applies the per-user API key limits: long-lived keys are refused past the
// limit; an expiring key past the limit evicts an expired key first, otherwise the oldest
// expiring key (Turnkey's documented behaviour).
func enforceKeyLimits(ctx context.Context, tx store.Tx, env Env, userID string, k *APIKey) error {
	if err := tx.Lock(ctx, "credentials\x00"+userID); err != nil {
		return err
	}
	keys, err := UserAPIKeys(ctx, tx, userID)
	if err != nil {
		return err
	}
	var expiring []*APIKey
	long := 0
	for _, other := range keys {
		if other.ExpiresAt.IsZero() {
			long++
		} else {
			expiring = append(expiring, other)
		}
	}
	if k.ExpiresAt.IsZero() {
		if env.Limits.APIKeysPerUser > 0 && long >= env.Limits.APIKeysPerUser {
			return apierr.New(
				apierr.ResourceExhausted,
				"RESOURCE_EXHAUSTED",
				"a user can have at most %d long-lived API keys",
				env.Limits.APIKeysPerUser,
			)
		}
		return nil
	}
	for env.Limits.ExpiringKeysPerUser > 0 && len(expiring) > 0 && len(expiring) >= env.Limits.ExpiringKeysPerUser {
		victim := 0
		for i, e := range expiring {
			if e.Expired(env.Now) {
				victim = i
				break
			}
		}
		if err := Delete(ctx, tx, KindAPIKey, expiring[victim].ID); err != nil {
			return err
		}
		expiring = append(expiring[:victim], expiring[victim+1:]...)
	}
	return nil
}

// CreateAuthenticator verifies a passkey registration and records it for u.
func CreateAuthenticator(
	ctx context.Context,
	tx store.Tx,
	env Env,
	u *User,
	spec AuthenticatorSpec,
) (*Authenticator, error) {
	if err := checkName(spec.Field+".authenticatorName", spec.Name); err != nil {
		return nil, err
	}
	if err := tx.Lock(ctx, "credentials\x00"+u.ID); err != nil {
		return nil, err
	}
	as, err := UserAuthenticators(ctx, tx, u.ID)
	if err != nil {
		return nil, err
	}
	if env.Limits.AuthenticatorsPerUser > 0 && len(as) >= env.Limits.AuthenticatorsPerUser {
		return nil, apierr.New(
			apierr.ResourceExhausted,
			"RESOURCE_EXHAUSTED",
			"a user can have at most %d authenticators",
			env.Limits.AuthenticatorsPerUser,
		)
	}
	reg, err := stamp.ParseAttestation(spec.Attestation, spec.Challenge, env.WebAuthn)
	if err != nil {
		return nil, apierr.Invalid(spec.Field+".attestation", "%v", err)
	}
	transports := spec.Attestation.Transports
	if transports == nil {
		transports = []string{}
	}
	a := &Authenticator{ID: id.New(), OrgID: u.OrgID, UserID: u.ID, Name: spec.Name, CredentialID: reg.CredentialID,
		COSEPublicKey: reg.COSEPublicKey, PublicKey: reg.PublicKey, Alg: reg.Alg, AAGUID: reg.AAGUID,
		AttestationType: reg.AttestationFormat, Transports: transports, SignCount: reg.SignCount,
		CreatedAt: env.Now, UpdatedAt: env.Now}
	if err := SaveAuthenticator(ctx, tx, a); err != nil {
		return nil, err
	}
	return a, nil
}

// CreateOAuthProvider links an OIDC identity to u: the claims given (oidcClaims), or those of
// an id_token, verified.
func CreateOAuthProvider(ctx context.Context, tx store.Tx, env Env, u *User, spec OAuthSpec) (*OAuthProvider, error) {
	fromToken := spec.Issuer == "" || spec.Subject == "" || spec.Audience == ""
	if fromToken {
		if spec.Token == "" {
			return nil, apierr.Required(spec.Field + ".oidcToken")
		}
		if env.VerifyOIDC == nil {
			return nil, apierr.Unsupported(spec.Field + ".oidcToken (no OIDC verifier is configured)")
		}
		id, err := env.VerifyOIDC(ctx, spec.Token, "")
		if err != nil {
			return nil, apierr.Invalid(spec.Field+".oidcToken", "%v", err)
		}
		spec.Issuer, spec.Subject, spec.Audience = id.Issuer, id.Subject, id.Audience
	}
	if err := checkOIDCIdentity(spec.Field, fromToken, spec); err != nil {
		return nil, err
	}
	if spec.Name = strings.TrimSpace(spec.Name); spec.Name == "" {
		return nil, apierr.Required(spec.Field + ".providerName")
	}
	p := &OAuthProvider{ID: id.New(), OrgID: u.OrgID, UserID: u.ID, Name: spec.Name, Issuer: spec.Issuer,
		Subject: spec.Subject, Audience: spec.Audience, CreatedAt: env.Now, UpdatedAt: env.Now}
	return p, SaveOAuthProvider(ctx, tx, p)
}

// DeleteUser removes a user, their credentials and their tag memberships.
func DeleteUser(ctx context.Context, tx store.Tx, now time.Time, u *User) error {
	keys, err := UserAPIKeys(ctx, tx, u.ID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := Delete(ctx, tx, KindAPIKey, k.ID); err != nil {
			return err
		}
	}
	as, err := UserAuthenticators(ctx, tx, u.ID)
	if err != nil {
		return err
	}
	for _, a := range as {
		if err := Delete(ctx, tx, KindAuthenticator, a.ID); err != nil {
			return err
		}
	}
	ps, err := UserOAuthProviders(ctx, tx, u.ID)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := Delete(ctx, tx, KindOAuthProvider, p.ID); err != nil {
			return err
		}
	}
	tagIDs, err := UserTagIDs(ctx, tx, u.ID)
	if err != nil {
		return err
	}
	for _, tid := range tagIDs {
		t, err := LoadUserTag(ctx, tx, u.OrgID, tid)
		if err != nil {
			return err
		}
		t.UserIDs = without(t.UserIDs, u.ID)
		t.UpdatedAt = now
		if err := SaveUserTag(ctx, tx, t); err != nil {
			return err
		}
	}
	return Delete(ctx, tx, KindUser, u.ID)
}

func without(xs []string, x string) []string {
	out := xs[:0:0]
	for _, v := range xs {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

// CheckName checks a name given in field (required, at most MaxNameLength bytes once
// trimmed) and returns it trimmed. Every named resource is checked with it.
func CheckName(field, name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", apierr.Required(field)
	case len(name) > MaxNameLength:
		return "", apierr.Invalid(field, "must be at most %d bytes", MaxNameLength)
	case !utf8.ValidString(name) || strings.ContainsFunc(name, isControl):
		return "", apierr.Invalid(field, "must be printable UTF-8 (no control characters)")
	}
	return name, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// CheckEmail checks an e-mail address given in field: at most wire.MaxEmailBytes (RFC 5321's
// 254), printable UTF-8, with an "@". A user's address is read with the user on every request
// and indexed; the engine refuses a longer one already (wire.CheckText), this holds it for
// every other caller.
func CheckEmail(field, email string) error {
	switch {
	case len(email) > wire.MaxEmailBytes:
		return apierr.Invalid(field, "must be at most %d bytes (RFC 5321), got %d", wire.MaxEmailBytes, len(email))
	case !utf8.ValidString(email) || strings.ContainsFunc(email, isControl):
		return apierr.Invalid(field, "must be printable UTF-8 (no control characters)")
	case !strings.Contains(email, "@"):
		return apierr.Invalid(field, "not an e-mail address: %q", email)
	}
	return nil
}

// Bounds of an OAuth provider's OIDC identity (issuer, subject, audience), given as oidcClaims
// or read from a verified id_token. The identity is stored with the provider and joined into a
// lookup key (oauth_provider.subject), which PostgreSQL's index refuses past 2,704 bytes (a
// 3.2 KB subject answered 500). OpenID Connect bounds a subject to 255 ASCII characters; issuers
// are URLs (https://accounts.google.com, 27 bytes; a Cognito pool's, about 70) and audiences
// client ids (Google's, about 75 bytes).
const (
	MaxOIDCIssuerBytes   = 512
	MaxOIDCSubjectBytes  = 255
	MaxOIDCAudienceBytes = 512
)

// checkOIDCIdentity refuses an issuer, subject or audience over its bound, naming where it came
// from: the claims given (field.oidcClaims.iss ...) or the token (field.oidcToken).
func checkOIDCIdentity(field string, fromToken bool, spec OAuthSpec) error {
	for _, c := range []struct {
		name, value string
		limit       int
	}{
		{"iss", spec.Issuer, MaxOIDCIssuerBytes},
		{"sub", spec.Subject, MaxOIDCSubjectBytes},
		{"aud", spec.Audience, MaxOIDCAudienceBytes},
	} {
		if len(c.value) <= c.limit {
			continue
		}
		if fromToken {
			return apierr.Invalid(field+".oidcToken", "its %s claim must be at most %d bytes, got %d",
				c.name, c.limit, len(c.value))
		}
		return apierr.Invalid(field+".oidcClaims."+c.name, "must be at most %d bytes, got %d", c.limit, len(c.value))
	}
	return nil
}

func checkName(field, name string) error {
	_, err := CheckName(field, name)
	return err
}

// ValidE164 reports whether s looks like an E.164 phone number.
func ValidE164(s string) bool {
	if len(s) < 3 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// NormalizePublicKey checks an API public key's encoding for its curve and returns it as
// lowercase hex: 33-byte compressed SEC1 for P-256 and secp256k1 (uncompressed input is
// compressed), 32 bytes for Ed25519.
func NormalizePublicKey(curve, s string) (string, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil || len(b) == 0 {
		return "", errNotHex
	}
	c := stamp.Curve(curve)
	if !validCurve(c) {
		return "", apierr.Invalid("curveType", "unknown curve %q", curve)
	}
	pub, err := stamp.NormalizePublicKey(c, b)
	if err != nil {
		return "", err
	}
	return pub, nil
}

func validCurve(c stamp.Curve) bool {
	switch c {
	case stamp.CurveP256, stamp.CurveSecp256k1, stamp.CurveEd25519:
		return true
	}
	return false
}

var errNotHex = apierr.Invalid("", "public key must be hex")
