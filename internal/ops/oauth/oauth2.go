package oauth

import (
	"errors"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/oidc"
	"github.com/latchkey/latchkey/internal/wire"
)

// TokenLifetime is how long the id_token oauth2_authenticate mints lives: long enough to log in
// or sign up with it.
const TokenLifetime = 10 * time.Minute

func redactAuthenticate(p *wire.Oauth2AuthenticateIntent) any {
	in := *p
	in.AuthCode, in.CodeVerifier = "[redacted]", "[redacted]"
	return &in
}

// exchange runs before the activity's transaction: the token and user-info requests to the
// provider. Its result is the provider's user.
func (d Deps) exchange(x *activity.Exec, in *wire.Oauth2AuthenticateIntent) (any, error) {
	if in.BearerTokenTargetPublicKey != "" {
		return nil, activity.ErrNotSupported(
			"bearerTokenTargetPublicKey on oauth2_authenticate (returning the provider's bearer token)",
		)
	}
	if strings.TrimSpace(in.Nonce) == "" {
		return nil, apierr.Required("parameters.nonce")
	}
	c, err := loadCredential(x.Ctx, x.R, x.OrgID, in.Oauth2CredentialId)
	if err != nil {
		return nil, err
	}
	if d.Providers == nil || d.Issuer == nil {
		return nil, activity.ErrNotSupported("oauth2_authenticate without an OIDC issuer")
	}
	p := d.Providers(c.Provider)
	p.ClientID = c.ClientID
	var user *oidc.UserInfo
	err = x.Services.Custodian.WithClientSecret(c.Sealed, c.binding(), func(secret string) error {
		p.ClientSecret = secret
		var err error
		user, err = p.Exchange(x.Ctx, in.AuthCode, in.RedirectUri, in.CodeVerifier)
		p.ClientSecret = ""
		return err
	})
	if err != nil {
		if errors.Is(err, oidc.ErrOAuth2) {
			return nil, apierr.Invalid("parameters.authCode", "%v", err)
		}
		return nil, apierr.Internalf(err, "opening the client secret")
	}
	if user.ID == "" {
		return nil, apierr.Invalid("parameters.authCode", "the provider named no user")
	}
	return user, nil
}

// authenticate mints Latchkey's id_token for the provider's user.
func (d Deps) authenticate(x *activity.Exec, in *wire.Oauth2AuthenticateIntent) (any, error) {
	c, err := loadCredential(x.Ctx, x.Tx, x.OrgID, in.Oauth2CredentialId)
	if err != nil {
		return nil, err
	}
	user := x.Prepared.(*oidc.UserInfo)
	provider := strings.ToLower(strings.TrimPrefix(c.Provider, "OAUTH2_PROVIDER_"))
	extra := map[string]any{"provider": provider}
	if user.Name != "" {
		extra["name"] = user.Name
	}
	tok, err := d.Issuer.Mint(
		oidc.MintClaims{Subject: provider + ":" + user.ID, Audience: c.ClientID, Email: user.Email,
			EmailVerified: user.EmailVerified, Nonce: in.Nonce, Lifetime: TokenLifetime, Extra: extra},
	)
	if err != nil {
		return nil, apierr.Internalf(err, "minting the OIDC token")
	}
	return wire.Oauth2AuthenticateResult{OidcToken: tok}, nil
}
