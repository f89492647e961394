package oauth

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/oidc"
	"github.com/latchkey/latchkey/internal/ops/login"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// KindCredential is an organization's OAuth 2.0 client.
const KindCredential = "oauth2_credential"

// OwnedKinds are the record kinds an organization owns here.
var OwnedKinds = []string{KindCredential}

// MaxCredentialsPerOrg bounds an organization's OAuth 2.0 clients.
const MaxCredentialsPerOrg = 32

// MaxClientSecretBytes bounds an OAuth 2.0 client secret. The credential keeps it twice (the
// client's envelope, answered by get and list, and sealed) and every oauth2_authenticate reads
// it; the envelope format allowed 64 KiB. Real secrets are tens of bytes (Google, GitHub,
// Discord, X, Microsoft), Apple's a signed JWT of a few hundred.
const MaxClientSecretBytes = 4096

// maxEnvelopeHex is the hex length of an envelope of MaxClientSecretBytes: nonce (12),
// ephemeral key (65), length (4), ciphertext and tag (16), with an optional 0x.
const maxEnvelopeHex = 2*(12+65+4+MaxClientSecretBytes+16) + len("0x")

// Credential is a stored OAuth 2.0 client.
type Credential struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Provider  string    `json:"provider"`
	ClientID  string    `json:"clientId"`
	Envelope  string    `json:"envelope"` // the encryptedClientSecret as given (encrypted to the server)
	Sealed    []byte    `json:"sealed"`   // the client secret, sealed
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

func (c *Credential) binding() custody.Binding {
	return custody.Binding{OrgID: c.OrgID, Kind: KindCredential, ID: c.ID}
}

func (c *Credential) toWire() wire.Oauth2Credential {
	return wire.Oauth2Credential{
		Oauth2CredentialId:    c.ID,
		OrganizationId:        c.OrgID,
		Provider:              wire.Oauth2Provider(c.Provider),
		ClientId:              c.ClientID,
		EncryptedClientSecret: c.Envelope,
		CreatedAt:             directory.Timestamp(c.CreatedAt),
		UpdatedAt:             directory.Timestamp(c.UpdatedAt),
	}
}

// Deps are what the operations need.
type Deps struct {
	Env func(x *activity.Exec) directory.Env
	// Issuer mints Latchkey's id_tokens after an OAuth 2.0 exchange.
	Issuer *oidc.Issuer
	// Providers returns the OAuth 2.0 provider (endpoints) for OAUTH2_PROVIDER_X / _DISCORD.
	Providers func(provider string) oidc.OAuth2Provider
}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{
			Path:           "oauth_login",
			Access:         activity.AccessRoot,
			ParentMayWrite: true,
			Execute:        activity.On(d.oauthLogin),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:           "oauth",
			Access:         activity.AccessRoot,
			ParentMayWrite: true,
			Execute:        activity.On(d.oauth),
		},
	)
	reg.Submit(activity.Operation{Path: "create_oauth_providers", Access: activity.AccessSelf,
		Execute: activity.Versions(activity.On(d.createProvidersV2), activity.On(d.createProviders)),
		SelfUser: activity.UserAny(func(_ *activity.Exec, in any) string {
			switch in := in.(type) {
			case *wire.CreateOauthProvidersIntentV2:
				return in.UserId
			case *wire.CreateOauthProvidersIntent:
				return in.UserId
			}
			return ""
		}, (*wire.CreateOauthProvidersIntentV2)(nil), (*wire.CreateOauthProvidersIntent)(nil))})
	reg.Submit(
		activity.Operation{
			Path:    "delete_oauth_providers",
			Access:  activity.AccessSelf,
			Execute: activity.On(deleteProviders),
			SelfUser: activity.User(
				func(_ *activity.Exec, in *wire.DeleteOauthProvidersIntent) string { return in.UserId },
			),
		},
	)
	reg.Query(activity.QueryOp{Path: "get_oauth_providers", Execute: activity.Query(getProviders)})
	reg.Submit(
		activity.Operation{
			Path:    "create_oauth2_credential",
			Access:  activity.AccessRoot,
			Execute: activity.On(createCredential),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "update_oauth2_credential",
			Access:  activity.AccessRoot,
			Execute: activity.On(updateCredential),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_oauth2_credential",
			Access:  activity.AccessRoot,
			Execute: activity.On(deleteCredential),
		},
	)
	reg.Query(activity.QueryOp{Path: "get_oauth2_credential", Execute: activity.Query(getCredential)})
	reg.Query(activity.QueryOp{Path: "list_oauth2_credentials", Execute: activity.Query(listCredentials)})
	reg.Submit(activity.Operation{Path: "oauth2_authenticate", Access: activity.AccessRoot, ParentMayWrite: true,
		Prepare: activity.On(
			d.exchange,
		), Execute: activity.On(d.authenticate), Redact: activity.Redactor(redactAuthenticate)})
	return OwnedKinds
}

// verified checks token (with the nonce of publicKey) and returns the one user of the
// organization it names.
func verified(x *activity.Exec, token, publicKey, keyField string) (*directory.User, error) {
	if _, err := custody.ParseP256PublicKeyHex(publicKey); err != nil {
		return nil, apierr.Invalid(keyField, "must be a P-256 public key in hex: %v", err)
	}
	if x.Services.VerifyOIDC == nil {
		return nil, apierr.Unsupported("OIDC tokens (no OIDC verifier is configured)")
	}
	ident, err := x.Services.VerifyOIDC(x.Ctx, token, oidc.NonceFor(strings.ToLower(publicKey)))
	if err != nil {
		return nil, apierr.Invalid("parameters.oidcToken", "%v", err)
	}
	ps, err := records.LookupAll[directory.OAuthProvider](x.Ctx, x.Tx, directory.KeyOAuthSubject,
		ident.Issuer+"\x00"+ident.Subject+"\x00"+ident.Audience, directory.KindOAuthProvider, x.OrgID)
	if err != nil {
		return nil, err
	}
	switch len(ps) {
	case 0:
		return nil, apierr.NotFoundf(
			"no user of organization %s has the OAuth identity of this token (issuer %s)",
			x.OrgID,
			ident.Issuer,
		)
	case 1:
		return directory.LoadUser(x.Ctx, x.Tx, x.OrgID, ps[0].UserID)
	}
	return nil, apierr.New(
		apierr.FailedPrecondition,
		"INVALID_REQUEST",
		"%d users of organization %s have this OAuth identity; cannot tell which one logs in",
		len(ps),
		x.OrgID,
	)
}

func (d Deps) oauthLogin(x *activity.Exec, in *wire.OauthLoginIntent) (any, error) {
	secs, err := login.Seconds(
		"parameters.expirationSeconds",
		in.ExpirationSeconds,
		login.DefaultSessionSeconds,
		login.MaxSessionSeconds,
	)
	if err != nil {
		return nil, err
	}
	u, err := verified(x, in.OidcToken, in.PublicKey, "parameters.publicKey")
	if err != nil {
		return nil, err
	}
	tok, err := login.Issue(
		x,
		d.Env(x),
		u,
		login.Spec{PublicKey: in.PublicKey, Seconds: secs, CredentialType: directory.CredentialOAuth,
			Name: "OAuth Login", InvalidateExisting: in.InvalidateExisting != nil && *in.InvalidateExisting, SessionProfileID: in.SessionProfileId},
	)
	if err != nil {
		return nil, err
	}
	return wire.OauthLoginResult{Session: tok}, nil
}

func (d Deps) oauth(x *activity.Exec, in *wire.OauthIntent) (any, error) {
	u, err := verified(x, in.OidcToken, in.TargetPublicKey, "parameters.targetPublicKey")
	if err != nil {
		return nil, err
	}
	k, bundle, err := login.Bundle(
		x,
		d.Env(x),
		u,
		in.TargetPublicKey,
		in.ApiKeyName,
		in.ExpirationSeconds,
		directory.CredentialOAuth,
		in.InvalidateExisting != nil && *in.InvalidateExisting,
	)
	if err != nil {
		return nil, err
	}
	return wire.OauthResult{UserId: u.ID, ApiKeyId: k.ID, CredentialBundle: bundle}, nil
}

// ---- providers linked to users ----

// createProvidersV2 is ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2, the version the swagger lists:
// its providers may carry an oidcClaims instead of a token (directory.OAuthV2).
func (d Deps) createProvidersV2(x *activity.Exec, in *wire.CreateOauthProvidersIntentV2) (any, error) {
	return d.addProviders(x, in.UserId, directory.OAuthV2("parameters.oauthProviders", in.OauthProviders))
}

func (d Deps) createProviders(x *activity.Exec, in *wire.CreateOauthProvidersIntent) (any, error) {
	return d.addProviders(x, in.UserId, directory.OAuthV1("parameters.oauthProviders", in.OauthProviders))
}

func (d Deps) addProviders(x *activity.Exec, userID string, specs []directory.OAuthSpec) (any, error) {
	const f = "parameters.oauthProviders"
	if len(specs) == 0 {
		return nil, apierr.Invalid(f, "at least one provider is required")
	}
	const limit = organizations.MaxOAuthProvidersPerRequest
	if err := organizations.CheckCount(f, len(specs), limit, "OAuth providers"); err != nil {
		return nil, err
	}
	u, err := directory.LoadUser(x.Ctx, x.Tx, x.OrgID, userID)
	if err != nil {
		return nil, err
	}
	env := d.Env(x)
	out := wire.CreateOauthProvidersResult{ProviderIds: []string{}}
	for _, spec := range specs {
		p, err := directory.CreateOAuthProvider(x.Ctx, x.Tx, env, u, spec)
		if err != nil {
			return nil, err
		}
		out.ProviderIds = append(out.ProviderIds, p.ID)
	}
	return out, nil
}

func deleteProviders(x *activity.Exec, in *wire.DeleteOauthProvidersIntent) (any, error) {
	const f = "parameters.providerIds"
	if len(in.ProviderIds) == 0 {
		return nil, apierr.Invalid(f, "at least one provider id is required")
	}
	if err := organizations.CheckIDs(f, in.ProviderIds, organizations.MaxIDsPerRequest, "provider ids"); err != nil {
		return nil, err
	}
	ps, err := directory.UserOAuthProviders(x.Ctx, x.Tx, in.UserId)
	if err != nil {
		return nil, err
	}
	mine := map[string]bool{}
	for _, p := range ps {
		if p.OrgID == x.OrgID {
			mine[p.ID] = true
		}
	}
	for i, pid := range in.ProviderIds {
		if !mine[pid] {
			return nil, apierr.NotFoundf("parameters.providerIds[%d]: the user has no OAuth provider %s", i, pid)
		}
		if err := directory.Delete(x.Ctx, x.Tx, directory.KindOAuthProvider, pid); err != nil {
			return nil, err
		}
		delete(mine, pid)
	}
	return wire.DeleteOauthProvidersResult{ProviderIds: in.ProviderIds}, nil
}

func getProviders(q *activity.Read, in *wire.GetOauthProvidersRequest) (any, error) {
	userID := in.UserId
	if userID == "" {
		userID = q.Caller.User.ID
	}
	if _, err := directory.LoadUser(q.Ctx, q.R, q.OrgID, userID); err != nil {
		return nil, err
	}
	ps, err := directory.UserOAuthProviders(q.Ctx, q.R, userID)
	if err != nil {
		return nil, err
	}
	out := wire.GetOauthProvidersResponse{OauthProviders: make([]wire.OauthProvider, 0, len(ps))}
	for _, p := range ps {
		out.OauthProviders = append(out.OauthProviders, p.ToWire())
	}
	return out, nil
}

// ---- OAuth 2.0 clients ----

func checkProvider(p wire.Oauth2Provider) error {
	for _, v := range wire.Oauth2ProviderValues {
		if string(p) == v {
			return nil
		}
	}
	return apierr.Invalid(
		"parameters.provider",
		"must be one of %s, got %q",
		strings.Join(wire.Oauth2ProviderValues, ", "),
		p,
	)
}

// fill validates and seals what create and update set.
func fill(x *activity.Exec, c *Credential, provider wire.Oauth2Provider, clientID, envelope string) error {
	if err := checkProvider(provider); err != nil {
		return err
	}
	clientID = strings.TrimSpace(clientID)
	if clientID == "" || len(clientID) > 256 {
		return apierr.Invalid("parameters.clientId", "must be 1 to 256 characters")
	}
	if len(strings.TrimSpace(envelope)) > maxEnvelopeHex {
		return apierr.Invalid(
			"parameters.encryptedClientSecret",
			"the client secret must be at most %d bytes (an envelope of at most %d hex digits)",
			MaxClientSecretBytes,
			maxEnvelopeHex,
		)
	}
	sealed, err := x.Services.Custodian.SealClientSecret(envelope, c.binding())
	if err != nil {
		if errors.Is(err, custody.ErrUnseal) {
			return apierr.Internalf(err, "sealing the client secret")
		}
		return apierr.Invalid(
			"parameters.encryptedClientSecret",
			"must be the client secret encrypted to the server's clientSecretsPublicKey (encryptOauth2ClientSecret): %v",
			err,
		)
	}
	c.Provider, c.ClientID, c.Envelope, c.Sealed, c.UpdatedAt = string(
		provider,
	), clientID, strings.TrimSpace(
		envelope,
	), sealed, x.Now
	return nil
}

func saveCredential(ctx context.Context, tx store.Tx, c *Credential) error {
	return records.Save(ctx, tx, KindCredential, c.ID, c.OrgID, c.CreatedAt, c.UpdatedAt, c)
}

func createCredential(x *activity.Exec, in *wire.CreateOauth2CredentialIntent) (any, error) {
	if n, err := x.Tx.Count(x.Ctx, KindCredential, x.OrgID, MaxCredentialsPerOrg); err != nil {
		return nil, apierr.Internalf(err, "counting OAuth 2.0 credentials")
	} else if n >= MaxCredentialsPerOrg {
		return nil, apierr.New(apierr.ResourceExhausted, "RESOURCE_EXHAUSTED", "an organization can have at most %d OAuth 2.0 credentials", MaxCredentialsPerOrg)
	}
	c := &Credential{ID: id.New(), OrgID: x.OrgID, CreatedAt: x.Now}
	if err := fill(x, c, in.Provider, in.ClientId, in.EncryptedClientSecret); err != nil {
		return nil, err
	}
	if err := saveCredential(x.Ctx, x.Tx, c); err != nil {
		return nil, err
	}
	return wire.CreateOauth2CredentialResult{Oauth2CredentialId: c.ID}, nil
}

func loadCredential(ctx context.Context, r store.Reader, orgID, id string) (*Credential, error) {
	return records.Load[Credential](ctx, r, KindCredential, orgID, id, "OAuth 2.0 credential")
}

func updateCredential(x *activity.Exec, in *wire.UpdateOauth2CredentialIntent) (any, error) {
	c, err := loadCredential(x.Ctx, x.Tx, x.OrgID, in.Oauth2CredentialId)
	if err != nil {
		return nil, err
	}
	if err := fill(x, c, in.Provider, in.ClientId, in.EncryptedClientSecret); err != nil {
		return nil, err
	}
	if err := saveCredential(x.Ctx, x.Tx, c); err != nil {
		return nil, err
	}
	return wire.UpdateOauth2CredentialResult{Oauth2CredentialId: c.ID}, nil
}

func deleteCredential(x *activity.Exec, in *wire.DeleteOauth2CredentialIntent) (any, error) {
	c, err := loadCredential(x.Ctx, x.Tx, x.OrgID, in.Oauth2CredentialId)
	if err != nil {
		return nil, err
	}
	if err := records.Delete(x.Ctx, x.Tx, KindCredential, c.ID); err != nil {
		return nil, err
	}
	return wire.DeleteOauth2CredentialResult{Oauth2CredentialId: c.ID}, nil
}

func getCredential(q *activity.Read, in *wire.GetOauth2CredentialRequest) (any, error) {
	c, err := loadCredential(q.Ctx, q.R, q.OrgID, in.Oauth2CredentialId)
	if err != nil {
		return nil, err
	}
	return wire.GetOauth2CredentialResponse{Oauth2Credential: c.toWire()}, nil
}

func listCredentials(q *activity.Read, _ *wire.ListOauth2CredentialsRequest) (any, error) {
	cs, err := records.List[Credential](q.Ctx, q.R, KindCredential, q.OrgID, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := wire.ListOauth2CredentialsResponse{Oauth2Credentials: make([]wire.Oauth2Credential, 0, len(cs))}
	for _, c := range cs {
		out.Oauth2Credentials = append(out.Oauth2Credentials, c.toWire())
	}
	return out, nil
}
