package directory

import (
	"strconv"

	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/wire"
)

// Converters from every version of the swagger's user/credential parameters to the specs above.

func idx(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

// APIKeysV2 converts ApiKeyParamsV2 (curve given).
func APIKeysV2(field string, in []wire.ApiKeyParamsV2) []APIKeySpec {
	out := make([]APIKeySpec, 0, len(in))
	for i, k := range in {
		out = append(
			out,
			APIKeySpec{
				Name:              k.ApiKeyName,
				PublicKey:         k.PublicKey,
				Curve:             string(k.CurveType),
				ExpirationSeconds: k.ExpirationSeconds,
				Field:             idx(field, i),
			},
		)
	}
	return out
}

// APIKeysV1 converts ApiApiKeyParams (P-256 implied).
func APIKeysV1(field string, in []wire.ApiApiKeyParams) []APIKeySpec {
	out := make([]APIKeySpec, 0, len(in))
	for i, k := range in {
		out = append(
			out,
			APIKeySpec{
				Name:              k.ApiKeyName,
				PublicKey:         k.PublicKey,
				Curve:             string(stamp.CurveP256),
				ExpirationSeconds: k.ExpirationSeconds,
				Field:             idx(field, i),
			},
		)
	}
	return out
}

// AuthenticatorsV2 converts AuthenticatorParamsV2.
func AuthenticatorsV2(field string, in []wire.AuthenticatorParamsV2) []AuthenticatorSpec {
	out := make([]AuthenticatorSpec, 0, len(in))
	for i, a := range in {
		out = append(out, AuthenticatorSpec{Name: a.AuthenticatorName, Challenge: a.Challenge, Field: idx(field, i),
			Attestation: stamp.Attestation{
				CredentialID:      a.Attestation.CredentialId,
				ClientDataJSON:    a.Attestation.ClientDataJson,
				AttestationObject: a.Attestation.AttestationObject,
				Transports:        transports(a.Attestation.Transports),
			}})
	}
	return out
}

// AuthenticatorsV1 converts the legacy AuthenticatorParams (a PublicKeyCredential object).
func AuthenticatorsV1(field string, in []wire.AuthenticatorParams) []AuthenticatorSpec {
	out := make([]AuthenticatorSpec, 0, len(in))
	for i, a := range in {
		out = append(out, AuthenticatorSpec{Name: a.AuthenticatorName, Challenge: a.Challenge, Field: idx(field, i),
			Attestation: stamp.Attestation{
				CredentialID:      a.Attestation.Id,
				ClientDataJSON:    a.Attestation.Response.ClientDataJson,
				AttestationObject: a.Attestation.Response.AttestationObject,
				Transports:        transports(a.Attestation.Response.Transports),
			}})
	}
	return out
}

func transports(in []wire.AuthenticatorTransport) []string {
	out := make([]string, 0, len(in))
	for _, t := range in {
		out = append(out, string(t))
	}
	return out
}

// OAuthV2 converts OauthProviderParamsV2 (token or claims).
func OAuthV2(field string, in []wire.OauthProviderParamsV2) []OAuthSpec {
	out := make([]OAuthSpec, 0, len(in))
	for i, p := range in {
		s := OAuthSpec{Name: p.ProviderName, Token: p.OidcToken, Field: idx(field, i)}
		if p.OidcClaims != nil {
			s.Issuer, s.Subject, s.Audience = p.OidcClaims.Iss, p.OidcClaims.Sub, p.OidcClaims.Aud
		}
		out = append(out, s)
	}
	return out
}

// OAuthV1 converts OauthProviderParams (token only).
func OAuthV1(field string, in []wire.OauthProviderParams) []OAuthSpec {
	out := make([]OAuthSpec, 0, len(in))
	for i, p := range in {
		out = append(out, OAuthSpec{Name: p.ProviderName, Token: p.OidcToken, Field: idx(field, i)})
	}
	return out
}
