package directory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

func TestValidE164(t *testing.T) {
	for in, want := range map[string]bool{"+13214567890": true, "+447911123456": true, "13214567890": false, "+0123": false, "+1-321": false, "+1": false, "+1234567890123456": false} {
		if ValidE164(in) != want {
			t.Errorf("ValidE164(%q) = %v", in, !want)
		}
	}
}

func TestNormalizePublicKey(t *testing.T) {
	const p256 = "02f739f8c77b32f4d5f13265861febd76e7a9c61a1140d296b8c16302508870316"
	for _, tc := range []struct {
		curve, in, want string
		ok              bool
	}{
		{"API_KEY_CURVE_P256", p256, p256, true},
		{"API_KEY_CURVE_P256", "0x" + p256, p256, true},
		{"API_KEY_CURVE_P256", "02F739F8C77B32F4D5F13265861FEBD76E7A9C61A1140D296B8C16302508870316", p256, true},
		{"API_KEY_CURVE_P256", "02", "", false},
		{"API_KEY_CURVE_P256", "zz", "", false},
		{"API_KEY_CURVE_ED25519", "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", true},
		{"API_KEY_CURVE_ED25519", p256, "", false},
		{"API_KEY_CURVE_NOPE", p256, "", false},
	} {
		got, err := NormalizePublicKey(tc.curve, tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("NormalizePublicKey(%s, %s) = %q, %v", tc.curve, tc.in, got, err)
		}
	}
}

func TestLimitsCheckAndKeyEviction(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "d.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	env := Env{
		Now: now,
		Limits: Limits{
			UsersPerOrg:           2,
			UserTagsPerOrg:        1,
			APIKeysPerUser:        1,
			ExpiringKeysPerUser:   2,
			AuthenticatorsPerUser: 1,
		},
	}
	var u *User
	err = st.Update(ctx, func(tx store.Tx) error {
		var err error
		if u, err = CreateUser(ctx, tx, env, "org", UserSpec{Name: "a"}); err != nil {
			return err
		}
		if _, err := CreateUser(ctx, tx, env, "org", UserSpec{Name: "b"}); err != nil {
			return err
		}
		_, err = CreateUser(ctx, tx, env, "org", UserSpec{Name: "c"})
		if apierr.From(err).Code != apierr.ResourceExhausted {
			t.Errorf("third user: %v", err)
		}
		// Unlimited costs nothing and refuses nothing.
		unl := env
		unl.Limits.UsersPerOrg = 0
		if _, err := CreateUser(ctx, tx, unl, "org", UserSpec{Name: "d"}); err != nil {
			t.Errorf("unlimited: %v", err)
		}
		// Expiring keys past the limit evict the oldest.
		for i, pub := range []string{
			"02f739f8c77b32f4d5f13265861febd76e7a9c61a1140d296b8c16302508870316",
			"03dd630d030f230691d3e14708f4c53a88b2ef0fde796744efa14eb453488853c1",
			"027acd653fcbb2d53f2087bfd32e106474e7d925aafb0dfa7d65691caf75c91081",
		} {
			e := env
			e.Now = now.Add(time.Duration(i) * time.Second)
			if _, err := CreateAPIKey(ctx, tx, e, u, APIKeySpec{Name: "k", PublicKey: pub, ExpirationSeconds: "900"}); err != nil {
				return err
			}
		}
		keys, err := UserAPIKeys(ctx, tx, u.ID)
		if err != nil {
			return err
		}
		if len(keys) != 2 || keys[0].PublicKey[:4] != "03dd" {
			t.Errorf("after eviction: %d keys, oldest %s", len(keys), keys[0].PublicKey)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// An OIDC identity read from a verified token is held to the same bounds as one given as
// claims, and the refusal names the token; one within them is stored.
func TestOIDCIdentityFromTokenBounded(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "d.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sub := strings.Repeat("s", MaxOIDCSubjectBytes+1)
	env := Env{Now: time.Now().UTC(), Limits: DefaultLimits,
		VerifyOIDC: func(_ context.Context, token, _ string) (*OIDCIdentity, error) {
			return &OIDCIdentity{Issuer: "https://issuer.example", Subject: sub[:len(token)], Audience: "app"}, nil
		}}
	err = st.Update(ctx, func(tx store.Tx) error {
		u, err := CreateUser(ctx, tx, env, "org", UserSpec{Name: "a"})
		if err != nil {
			return err
		}
		long := OAuthSpec{Name: "p", Token: sub, Field: "parameters.oauthProviders[0]"}
		_, err = CreateOAuthProvider(ctx, tx, env, u, long)
		if e := apierr.From(err); e.Code != apierr.InvalidArgument ||
			!strings.Contains(e.Message, "parameters.oauthProviders[0].oidcToken") ||
			!strings.Contains(e.Message, "sub claim must be at most 255 bytes") {
			t.Errorf("a token with a long subject: %v", err)
		}
		fits := OAuthSpec{Name: "p", Token: sub[:MaxOIDCSubjectBytes], Field: "f"}
		_, err = CreateOAuthProvider(ctx, tx, env, u, fits)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
