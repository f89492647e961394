package directory

import (
	"context"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/store"
)

// Credential types (v1CredentialType) Latchkey issues.
const (
	CredentialWebAuthn         = "CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR"
	CredentialAPIKeyP256       = "CREDENTIAL_TYPE_API_KEY_P256"
	CredentialAPIKeySecp256k1  = "CREDENTIAL_TYPE_API_KEY_SECP256K1"
	CredentialAPIKeyEd25519    = "CREDENTIAL_TYPE_API_KEY_ED25519"
	CredentialReadWriteSession = "CREDENTIAL_TYPE_READ_WRITE_SESSION_KEY_P256"
	CredentialOTPAuth          = "CREDENTIAL_TYPE_OTP_AUTH_KEY_P256"
	CredentialEmailAuth        = "CREDENTIAL_TYPE_EMAIL_AUTH_KEY_P256"
	CredentialOAuth            = "CREDENTIAL_TYPE_OAUTH_KEY_P256"
	CredentialRecoverUser      = "CREDENTIAL_TYPE_RECOVER_USER_KEY_P256"
	CredentialLogin            = "CREDENTIAL_TYPE_LOGIN"
	// CredentialAuthProxy is an organization's auth proxy key (internal/authproxy): a P-256
	// API key whose private half Latchkey holds sealed, allowed only the activities and
	// queries activity.ProxyAllowed lists. It is Latchkey's own type; the wire shows it as
	// CREDENTIAL_TYPE_API_KEY_P256, the type Turnkey's clients know.
	CredentialAuthProxy = "CREDENTIAL_TYPE_AUTH_PROXY_KEY_P256"
)

// CredentialTypeForCurve is the credential type of a long-lived API key on curve.
func CredentialTypeForCurve(curve string) string {
	switch curve {
	case "API_KEY_CURVE_SECP256K1":
		return CredentialAPIKeySecp256k1
	case "API_KEY_CURVE_ED25519":
		return CredentialAPIKeyEd25519
	default:
		return CredentialAPIKeyP256
	}
}

// Caller is who made a request, as resolved from a verified stamp.
type Caller struct {
	User         *User
	Org          *Organization // the caller's own organization
	Target       *Organization // the organization the request names
	ParentAccess bool          // Org is Target's parent (read-only access)
	// The credential that stamped the request.
	CredentialID   string // API key id or authenticator id
	CredentialType string
	PublicKey      string
	Scheme         string
	Signature      string
	// SessionProfileID is set when the API key is a session key bound to a profile.
	SessionProfileID string
	// KeyAllowlist is the IP allowlist of the API key that stamped the request, if any.
	KeyAllowlist *IPAllowlist
	// AttestedTokenID is the OTP verification token an X-Stamp-Attested carried; the login it
	// authorizes uses the token up.
	AttestedTokenID string
}

// IsRoot reports whether the caller is in the target organization's root quorum.
func (c *Caller) IsRoot() bool {
	return !c.ParentAccess && c.Target.IsRoot(c.User.ID)
}

// Messages the SDKs match on (docs/wire.md §6.3).
const (
	msgKeyNotFound  = "could not find public key in organization or its parent organization"
	msgKeyExpired   = "rpc error: code = Unauthenticated desc = expired api key publicKey: "
	msgCredNotFound = "credential ID could not be found in organization or its parent organization"
)

// Resolver finds the caller for a verified credential.
type Resolver struct {
	Now func() time.Time
	// Cache, when set, holds API-key resolutions (ResolveAPIKey); the Reader given must then
	// read committed data (Store.View), never a transaction's own writes.
	Cache *CallerCache
}

// target loads the organization a request names and its parent.
func target(ctx context.Context, r store.Reader, orgID string) (*Organization, *Organization, error) {
	return targetNoting(ctx, r, orgID, nil)
}

// targetNoting is target that calls beforeParent with the parent's id before it reads it.
func targetNoting(
	ctx context.Context,
	r store.Reader,
	orgID string,
	beforeParent func(string),
) (*Organization, *Organization, error) {
	if orgID == "" {
		return nil, nil, apierr.Required("organizationId")
	}
	t, err := LoadOrganization(ctx, r, orgID)
	if err != nil {
		if apierr.From(err).Code == apierr.NotFound {
			return nil, nil, apierr.Unauth("ORGANIZATION_NOT_FOUND", "organization not found: %s", orgID)
		}
		return nil, nil, err
	}
	var parent *Organization
	if t.ParentID != "" {
		if beforeParent != nil {
			beforeParent(t.ParentID)
		}
		if parent, err = LoadOrganization(ctx, r, t.ParentID); err != nil {
			return nil, nil, err
		}
	}
	return t, parent, nil
}

// ResolveAPIKey finds the API key publicKey (lowercase hex, of curve) in the target organization
// or, failing that, in its parent, and returns the caller it belongs to.
func (res Resolver) ResolveAPIKey(
	ctx context.Context,
	r store.Reader,
	targetOrgID, publicKey, curve string,
) (*Caller, error) {
	if res.Cache == nil {
		e, err := res.readAPIKey(ctx, r, targetOrgID, publicKey, curve, nil)
		if err != nil {
			return nil, err
		}
		return e.caller(publicKey), nil
	}
	e, err := res.Cache.Load(
		ctx,
		callerKey(targetOrgID, publicKey),
		targetOrgID,
		func(also func(string)) (*resolvedKey, error) {
			e, err := res.readAPIKey(ctx, r, targetOrgID, publicKey, curve, also)
			if err == nil {
				e.prepare()
			}
			return e, err
		},
	)
	if err != nil {
		return nil, err
	}
	// A cached key was checked for the request that read it; this one may name another curve,
	// and the key may have expired since.
	if err := res.checkAPIKey(e.k, publicKey, curve); err != nil {
		return nil, err
	}
	return e.caller(publicKey), nil
}

// readAPIKey reads what ResolveAPIKey resolves from the store.
func (res Resolver) readAPIKey(
	ctx context.Context,
	r store.Reader,
	targetOrgID, publicKey, curve string,
	beforeParent func(string),
) (*resolvedKey, error) {
	t, parent, err := targetNoting(ctx, r, targetOrgID, beforeParent)
	if err != nil {
		return nil, err
	}
	pick, err := pickRef(ctx, r, KeyAPIKeyPublicKey, publicKey, KindAPIKey, t, parent)
	if err != nil {
		return nil, err
	}
	if pick == nil {
		return nil, apierr.Unauth("PUBLIC_KEY_NOT_FOUND", "%s: %s", msgKeyNotFound, publicKey)
	}
	k, err := LoadAPIKey(ctx, r, pick.OrgID, pick.ID)
	if err != nil {
		if apierr.From(err).Code == apierr.NotFound {
			return nil, apierr.Unauth("PUBLIC_KEY_NOT_FOUND", "%s: %s", msgKeyNotFound, publicKey)
		}
		return nil, err
	}
	if err := res.checkAPIKey(k, publicKey, curve); err != nil {
		return nil, err
	}
	u, err := LoadUser(ctx, r, k.OrgID, k.UserID)
	if err != nil {
		return nil, err
	}
	return &resolvedKey{t: t, parent: parent, k: k, u: u}, nil
}

// checkAPIKey refuses a key of another curve or expired.
func (res Resolver) checkAPIKey(k *APIKey, publicKey, curve string) error {
	if k.Curve != curve {
		return apierr.Unauth("PUBLIC_KEY_NOT_FOUND", "%s: %s (no key on curve %s)", msgKeyNotFound, publicKey, curve)
	}
	if k.Expired(res.Now()) {
		return apierr.Unauth("API_KEY_EXPIRED", "%s%s", msgKeyExpired, publicKey)
	}
	return nil
}

// ResolveAuthenticator finds the passkey credentialID in the target organization or its parent.
func (res Resolver) ResolveAuthenticator(
	ctx context.Context,
	r store.Reader,
	targetOrgID, credentialID string,
) (*Caller, *Authenticator, error) {
	t, parent, err := target(ctx, r, targetOrgID)
	if err != nil {
		return nil, nil, err
	}
	pick, err := pickRef(ctx, r, KeyAuthCredentialID, credentialID, KindAuthenticator, t, parent)
	if err != nil {
		return nil, nil, err
	}
	if pick == nil {
		return nil, nil, apierr.Unauth("CREDENTIAL_NOT_FOUND", "%s: %s", msgCredNotFound, credentialID)
	}
	a, err := LoadAuthenticator(ctx, r, pick.OrgID, pick.ID)
	if err != nil {
		return nil, nil, err
	}
	c := &Caller{Target: t, CredentialID: a.ID, CredentialType: CredentialWebAuthn, PublicKey: a.PublicKey}
	return c, a, res.finish(ctx, r, c, a.OrgID, a.UserID, parent)
}

// SubOrgHolding returns the one sub-organization of parentOrgID holding a record of kind that
// carries key=value ("" when none does). Logins (stamp_login) name the parent organization and
// are served in the sub-organization that holds the credential (docs/wire.md §2).
func SubOrgHolding(ctx context.Context, r store.Reader, parentOrgID, key, value, kind string) (string, error) {
	refs, err := r.Lookup(ctx, key, value)
	if err != nil {
		return "", apierr.Internalf(err, "looking up %s", kind)
	}
	found := ""
	for _, ref := range refs {
		if ref.Kind != kind || ref.OrgID == found || ref.OrgID == parentOrgID {
			continue
		}
		o, err := LoadOrganization(ctx, r, ref.OrgID)
		if err != nil || o.ParentID != parentOrgID {
			continue
		}
		if found != "" {
			return "", apierr.Unauth("AMBIGUOUS_CREDENTIAL", "more than one suborg associated with a credential ID")
		}
		found = o.ID
	}
	return found, nil
}

// pickRef finds the record of kind carrying key=value in the target organization, or failing
// that in its parent; nil when neither has one.
func pickRef(
	ctx context.Context,
	r store.Reader,
	key, value, kind string,
	t, parent *Organization,
) (*store.Ref, error) {
	refs, err := r.Lookup(ctx, key, value)
	if err != nil {
		return nil, apierr.Internalf(err, "looking up %s", kind)
	}
	var pick *store.Ref
	for i := range refs {
		ref := &refs[i]
		if ref.Kind != kind {
			continue
		}
		if ref.OrgID == t.ID {
			return ref, nil
		}
		if parent != nil && ref.OrgID == parent.ID {
			pick = ref
		}
	}
	return pick, nil
}

func (res Resolver) finish(
	ctx context.Context,
	r store.Reader,
	c *Caller,
	orgID, userID string,
	parent *Organization,
) error {
	if orgID == c.Target.ID {
		c.Org = c.Target
	} else {
		c.Org, c.ParentAccess = parent, true
	}
	u, err := LoadUser(ctx, r, orgID, userID)
	if err != nil {
		return err
	}
	c.User = u
	return nil
}

// ResolveSession finds the caller of a read-only session issued to userID in sessionOrgID, for a
// request naming targetOrgID (the session's organization or one of its sub-organizations).
func (res Resolver) ResolveSession(
	ctx context.Context,
	r store.Reader,
	targetOrgID, sessionOrgID, userID string,
) (*Caller, error) {
	t, parent, err := target(ctx, r, targetOrgID)
	if err != nil {
		return nil, err
	}
	if t.ID != sessionOrgID && (parent == nil || parent.ID != sessionOrgID) {
		return nil, apierr.Unauth("INVALID_SESSION", "the session is for another organization")
	}
	c := &Caller{Target: t, CredentialType: "SESSION_TYPE_READ_ONLY"}
	if err := res.finish(ctx, r, c, sessionOrgID, userID, parent); err != nil {
		if apierr.From(err).Code == apierr.NotFound {
			return nil, apierr.Unauth("INVALID_SESSION", "the session's user no longer exists")
		}
		return nil, err
	}
	return c, nil
}
