package otp

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/ops/login"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Attested resolves the callers of X-Stamp-Attested requests (docs/wire.md §2b): @turnkey/core
// logs in after an OTP or an OAuth sign-in with stamp_login stamped by the session key and
// attested by the OTP verification token (whose public_key claim is that key) or by an OIDC
// id_token (whose nonce is the hex SHA-256 of that key's hex).
type Attested struct {
	// OTPKeys returns the keys that verify verification tokens (the server's OTP key in use
	// first; more while a rotation of it overlaps).
	OTPKeys func() []*ecdsa.PublicKey
	// VerifyOIDC checks an id_token (signature, trusted issuer, exp) and its nonce; nil refuses
	// OIDC attestations as not supported.
	VerifyOIDC directory.VerifyOIDC
	Now        func() time.Time
}

func attestError(format string, args ...any) error {
	return apierr.Unauth("INVALID_STAMP", "invalid X-Stamp-Attested: "+format, args...)
}

// Resolve returns the caller: the one user of orgID, or of one of its sub-organizations, that
// the attestation names. The caller's organization is that user's.
func (a Attested) Resolve(
	ctx context.Context,
	r store.Reader,
	orgID string,
	p stamp.AttestedProof,
) (*directory.Caller, error) {
	stampKey, err := custody.ParseP256PublicKeyHex(p.PublicKey)
	if err != nil {
		return nil, attestError("publicKey: %v", err)
	}
	var users []*directory.User
	c := &directory.Caller{PublicKey: strings.ToLower(p.PublicKey), Scheme: p.Scheme, Signature: p.Signature}
	switch p.Scheme {
	case stamp.SchemeAttestedVerificationToken:
		claims, err := ParseToken(p.Attestation, a.OTPKeys(), a.Now())
		if err != nil {
			return nil, attestError("verification token: %v", err)
		}
		tokKey, err := custody.ParseP256PublicKeyHex(claims.PublicKey)
		if err != nil || !bytes.Equal(tokKey, stampKey) {
			return nil, attestError("the verification token was not issued for the stamp's public key")
		}
		t, err := records.Load[Token](ctx, r, KindVerificationToken, "", claims.ID, "verification token")
		if err != nil || t.OrgID != claims.OrganizationID {
			return nil, attestError("unknown verification token")
		}
		if t.Used {
			return nil, attestError("this verification token was already used")
		}
		key, value := directory.KeyUserEmail, strings.ToLower(claims.Contact)
		if claims.VerificationType == TypeSMS {
			key, value = directory.KeyUserPhone, claims.Contact
		}
		if users, err = usersUnder(ctx, r, orgID, key, value, directory.KindUser, func(ref store.Ref) (*directory.User, error) {
			return directory.LoadUser(ctx, r, ref.OrgID, ref.ID)
		}); err != nil {
			return nil, err
		}
		// The token must come from the user's organization or its parent (the proxy's).
		kept := users[:0]
		for _, u := range users {
			if o, err := directory.LoadOrganization(ctx, r, u.OrgID); err == nil &&
				(o.ID == t.OrgID || o.ParentID == t.OrgID) {
				kept = append(kept, u)
			}
		}
		users = kept
		c.CredentialID, c.CredentialType, c.AttestedTokenID = t.ID, directory.CredentialOTPAuth, t.ID
	case stamp.SchemeAttestedOIDC:
		if a.VerifyOIDC == nil {
			return nil, apierr.Unsupported("X-Stamp-Attested with an OIDC token (no OIDC verifier is configured)")
		}
		nonce := sha256.Sum256([]byte(strings.ToLower(p.PublicKey)))
		id, err := a.VerifyOIDC(ctx, p.Attestation, hex.EncodeToString(nonce[:]))
		if err != nil {
			return nil, attestError("OIDC token: %v", err)
		}
		if users, err = usersUnder(ctx, r, orgID, directory.KeyOAuthSubject, id.Issuer+"\x00"+id.Subject+"\x00"+id.Audience, directory.KindOAuthProvider,
			func(ref store.Ref) (*directory.User, error) {
				op, err := records.Load[directory.OAuthProvider](ctx, r, directory.KindOAuthProvider, ref.OrgID, ref.ID, "OAuth provider")
				if err != nil {
					return nil, err
				}
				return directory.LoadUser(ctx, r, op.OrgID, op.UserID)
			}); err != nil {
			return nil, err
		}
		c.CredentialType = directory.CredentialOAuth
	default:
		return nil, attestError("scheme %q is not supported", p.Scheme)
	}
	switch len(users) {
	case 0:
		return nil, apierr.Unauth(
			"USER_NOT_FOUND",
			"no user of organization %s or its sub-organizations matches the X-Stamp-Attested attestation",
			orgID,
		)
	case 1:
	default:
		return nil, apierr.Unauth(
			"AMBIGUOUS_USER",
			"%d users match the X-Stamp-Attested attestation; cannot tell which one logs in",
			len(users),
		)
	}
	u := users[0]
	org, err := directory.LoadOrganization(ctx, r, u.OrgID)
	if err != nil {
		return nil, err
	}
	c.User, c.Org, c.Target = u, org, org
	if c.CredentialID == "" {
		c.CredentialID = u.ID
	}
	return c, nil
}

// usersUnder loads, for each record of kind carrying key=value in orgID or in a sub-organization
// of orgID, the user it belongs to.
func usersUnder(
	ctx context.Context,
	r store.Reader,
	orgID, key, value, kind string,
	user func(store.Ref) (*directory.User, error),
) ([]*directory.User, error) {
	refs, err := r.Lookup(ctx, key, value)
	if err != nil {
		return nil, apierr.Internalf(err, "looking up %s", kind)
	}
	var out []*directory.User
	seen := map[string]bool{}
	for _, ref := range refs {
		if ref.Kind != kind {
			continue
		}
		if ref.OrgID != orgID {
			o, err := directory.LoadOrganization(ctx, r, ref.OrgID)
			if err != nil || o.ParentID != orgID {
				continue
			}
		}
		u, err := user(ref)
		if err != nil {
			if apierr.From(err).Code == apierr.NotFound {
				continue
			}
			return nil, err
		}
		if !seen[u.ID] {
			seen[u.ID] = true
			out = append(out, u)
		}
	}
	return out, nil
}

// stampLogin registers the request's session key for the caller and returns the session. The
// caller is whoever stamped the request: an API key, a passkey, or an attested OTP/OAuth
// sign-in (whose verification token it uses up).
func (d Deps) stampLogin(x *activity.Exec, in *wire.StampLoginIntent) (any, error) {
	secs, err := login.Seconds(
		"parameters.expirationSeconds",
		in.ExpirationSeconds,
		login.DefaultSessionSeconds,
		login.MaxSessionSeconds,
	)
	if err != nil {
		return nil, err
	}
	if _, err := custody.ParseP256PublicKeyHex(in.PublicKey); err != nil {
		return nil, apierr.Invalid("parameters.publicKey", "must be a P-256 public key in hex: %v", err)
	}
	if tid := x.Caller.AttestedTokenID; tid != "" {
		t, err := records.Load[Token](x.Ctx, x.Tx, KindVerificationToken, "", tid, "verification token")
		if err != nil {
			return nil, err
		}
		if t.Used {
			return nil, apierr.Invalid("X-Stamp-Attested", "this verification token was already used")
		}
		t.Used = true
		if err := records.Save(x.Ctx, x.Tx, KindVerificationToken, t.ID, t.OrgID, x.Now, x.Now, t); err != nil {
			return nil, err
		}
	}
	tok, err := login.Issue(
		x,
		d.Env(x),
		x.Caller.User,
		login.Spec{PublicKey: in.PublicKey, Seconds: secs, CredentialType: directory.CredentialLogin,
			Name: "Login", InvalidateExisting: in.InvalidateExisting != nil && *in.InvalidateExisting, SessionProfileID: in.SessionProfileId},
	)
	if err != nil {
		return nil, err
	}
	return wire.StampLoginResult{Session: tok}, nil
}
