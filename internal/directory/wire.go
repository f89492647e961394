package directory

import (
	"context"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Timestamp renders a time as the swagger's {seconds, nanos}.
func Timestamp(t time.Time) wire.Externaldatav1Timestamp {
	return wire.Externaldatav1Timestamp{Seconds: strconv.FormatInt(t.Unix(), 10), Nanos: strconv.Itoa(t.Nanosecond())}
}

// ToWire renders an API key.
func (k *APIKey) ToWire() wire.ApiKey {
	ct := k.CredentialType
	if ct == CredentialAuthProxy {
		ct = CredentialAPIKeyP256
	}
	return wire.ApiKey{
		Credential: wire.Externaldatav1Credential{
			PublicKey:        k.PublicKey,
			Type:             wire.CredentialType(ct),
			SessionProfileId: k.SessionProfileID,
		},
		ApiKeyId:          k.ID,
		ApiKeyName:        k.Name,
		CreatedAt:         Timestamp(k.CreatedAt),
		UpdatedAt:         Timestamp(k.UpdatedAt),
		ExpirationSeconds: k.ExpirationSeconds,
	}
}

// ToWire renders an authenticator.
func (a *Authenticator) ToWire() wire.Authenticator {
	ts := make([]wire.AuthenticatorTransport, 0, len(a.Transports))
	for _, t := range a.Transports {
		ts = append(ts, wire.AuthenticatorTransport(t))
	}
	return wire.Authenticator{
		Transports: ts, AttestationType: a.AttestationType, Aaguid: a.AAGUID, CredentialId: a.CredentialID,
		Model: "",
		Credential: wire.Externaldatav1Credential{
			PublicKey: a.PublicKey,
			Type:      wire.CredentialType(CredentialWebAuthn),
		},
		AuthenticatorId: a.ID, AuthenticatorName: a.Name,
		CreatedAt: Timestamp(a.CreatedAt), UpdatedAt: Timestamp(a.UpdatedAt),
	}
}

// ToWire renders an OAuth provider.
func (p *OAuthProvider) ToWire() wire.OauthProvider {
	return wire.OauthProvider{ProviderId: p.ID, ProviderName: p.Name, Issuer: p.Issuer, Audience: p.Audience,
		Subject: p.Subject, CreatedAt: Timestamp(p.CreatedAt), UpdatedAt: Timestamp(p.UpdatedAt)}
}

// ToWire renders a user tag.
func (t *UserTag) ToWire() wire.Datav1Tag {
	return wire.Datav1Tag{
		TagId:     t.ID,
		TagName:   t.Name,
		TagType:   "TAG_TYPE_USER",
		CreatedAt: Timestamp(t.CreatedAt),
		UpdatedAt: Timestamp(t.UpdatedAt),
	}
}

// UserToWire renders a user with its credentials and tags.
func UserToWire(ctx context.Context, r store.Reader, u *User) (wire.User, error) {
	w := wire.User{UserId: u.ID, UserName: u.Name, UserEmail: u.Email, UserPhoneNumber: u.PhoneNumber,
		Authenticators: []wire.Authenticator{}, ApiKeys: []wire.ApiKey{}, UserTags: []string{},
		OauthProviders: []wire.OauthProvider{}, MfaPolicies: []wire.MfaPolicy{},
		CreatedAt: Timestamp(u.CreatedAt), UpdatedAt: Timestamp(u.UpdatedAt)}
	as, err := UserAuthenticators(ctx, r, u.ID)
	if err != nil {
		return w, err
	}
	for _, a := range as {
		w.Authenticators = append(w.Authenticators, a.ToWire())
	}
	ks, err := UserAPIKeys(ctx, r, u.ID)
	if err != nil {
		return w, err
	}
	for _, k := range ks {
		w.ApiKeys = append(w.ApiKeys, k.ToWire())
	}
	if w.UserTags, err = UserTagIDs(ctx, r, u.ID); err != nil {
		return w, err
	}
	ps, err := UserOAuthProviders(ctx, r, u.ID)
	if err != nil {
		return w, err
	}
	for _, p := range ps {
		w.OauthProviders = append(w.OauthProviders, p.ToWire())
	}
	return w, nil
}

// QuorumToWire renders a root quorum.
func (o *Organization) QuorumToWire() *wire.Externaldatav1Quorum {
	ids := append([]string{}, o.RootQuorum.UserIDs...)
	return &wire.Externaldatav1Quorum{Threshold: int32(o.RootQuorum.Threshold), UserIds: ids}
}

// FeaturesToWire renders the feature list.
func (o *Organization) FeaturesToWire() []wire.Feature {
	out := make([]wire.Feature, 0, len(o.Features))
	for _, f := range o.Features {
		out = append(out, wire.Feature{Name: wire.FeatureName(f.Name), Value: f.Value})
	}
	return out
}
