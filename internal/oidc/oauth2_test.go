package oidc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// oauthServer is a local OAuth 2.0 provider: /token and /me.
type oauthServer struct {
	srv       *httptest.Server
	form      url.Values
	basicUser string
	basicPass string
	hasBasic  bool
	bearer    string
	tokenCode int
	tokenBody string
	meCode    int
	meBody    string
}

func newOAuthServer(t *testing.T) *oauthServer {
	o := &oauthServer{
		tokenCode: 200,
		tokenBody: `{"access_token":"at-SECRET-123","token_type":"Bearer","expires_in":604800}`,
		meCode:    200,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		o.form, _ = url.ParseQuery(string(b))
		o.basicUser, o.basicPass, o.hasBasic = r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(o.tokenCode)
		_, _ = io.WriteString(w, o.tokenBody)
	})
	mux.HandleFunc("GET /me", func(w http.ResponseWriter, r *http.Request) {
		o.bearer = r.Header.Get("Authorization")
		w.WriteHeader(o.meCode)
		_, _ = io.WriteString(w, o.meBody)
	})
	o.srv = httptest.NewServer(mux)
	t.Cleanup(o.srv.Close)
	return o
}

func TestOAuth2Discord(t *testing.T) {
	o := newOAuthServer(t)
	o.meBody = `{"id":"80351110224678912","username":"nelly","global_name":"Nelly","email":"nelly@discord.test","verified":true}`
	p := Discord("client-1", "shh-secret")
	if p.TokenURL != DiscordTokenURL || p.UserInfoURL != DiscordUserInfoURL {
		t.Fatalf("defaults %+v", p)
	}
	p.TokenURL, p.UserInfoURL = o.srv.URL+"/token", o.srv.URL+"/me"
	u, err := p.Exchange(context.Background(), "the-code", "https://app.test/cb", "verifier-xyz")
	if err != nil {
		t.Fatal(err)
	}
	if *u != (UserInfo{ID: "80351110224678912", Email: "nelly@discord.test", Name: "Nelly", EmailVerified: true}) {
		t.Fatalf("user %+v", u)
	}
	want := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {"the-code"},
		"redirect_uri":  {"https://app.test/cb"},
		"code_verifier": {"verifier-xyz"},
		"client_id":     {"client-1"},
		"client_secret": {"shh-secret"},
	}
	if o.form.Encode() != want.Encode() {
		t.Fatalf("form %v", o.form)
	}
	if o.hasBasic {
		t.Fatal("Discord got basic auth")
	}
	if o.bearer != "Bearer at-SECRET-123" {
		t.Fatalf("user-info Authorization %q", o.bearer)
	}
}

func TestOAuth2X(t *testing.T) {
	o := newOAuthServer(t)
	o.meBody = `{"data":{"id":"2244994945","name":"X Dev","username":"xdevelopers"}}`
	p := X("client-x", "x-secret/+")
	if p.TokenURL != XTokenURL || p.UserInfoURL != XUserInfoURL {
		t.Fatalf("defaults %+v", p)
	}
	p.TokenURL, p.UserInfoURL = o.srv.URL+"/token", o.srv.URL+"/me"
	u, err := p.Exchange(context.Background(), "c", "https://app.test/cb", "v")
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != "2244994945" || u.Name != "X Dev" || u.Email != "" {
		t.Fatalf("user %+v", u)
	}
	if !o.hasBasic || o.basicUser != "client-x" || o.basicPass != url.QueryEscape("x-secret/+") {
		t.Fatalf("basic auth %v %q %q", o.hasBasic, o.basicUser, o.basicPass)
	}
	if o.form.Has("client_secret") || o.form.Get("client_id") != "client-x" || o.form.Get("code_verifier") != "v" {
		t.Fatalf("form %v", o.form)
	}
}

func TestOAuth2PublicClientSendsNoSecret(t *testing.T) {
	o := newOAuthServer(t)
	o.meBody = `{"data":{"id":"1"}}`
	p := OAuth2Provider{Name: "x", TokenURL: o.srv.URL + "/token", UserInfoURL: o.srv.URL + "/me", ClientID: "pub"}
	if _, err := p.Exchange(context.Background(), "c", "r", "v"); err != nil {
		t.Fatal(err)
	}
	if o.hasBasic || o.form.Has("client_secret") {
		t.Fatal("secret sent for a public client")
	}
}

func TestOAuth2Errors(t *testing.T) {
	const secret, code, verifier = "shh-secret", "code-abc-123", "verifier-xyz"
	tests := []struct {
		name  string
		setup func(*oauthServer)
		want  []string
	}{
		{"token endpoint refuses", func(o *oauthServer) {
			o.tokenCode, o.tokenBody = 400, `{"error":"invalid_grant","error_description":"Invalid \"code\" in request: code-abc-123"}`
		}, []string{"HTTP 400", "invalid_grant", "[redacted]"}},
		{
			"token endpoint 500 without JSON",
			func(o *oauthServer) { o.tokenCode, o.tokenBody = 500, "oops" },
			[]string{"HTTP 500"},
		},
		{
			"no access token",
			func(o *oauthServer) { o.tokenBody = `{"token_type":"Bearer"}` },
			[]string{"no access token"},
		},
		{
			"not bearer",
			func(o *oauthServer) { o.tokenBody = `{"access_token":"at-SECRET-123","token_type":"mac"}` },
			[]string{"not bearer"},
		},
		{"user-info refuses", func(o *oauthServer) {
			o.meCode, o.meBody = 401, `{"message":"401: Unauthorized at-SECRET-123","code":0}`
		}, []string{"user-info endpoint answered HTTP 401", "Unauthorized"}},
		{"user-info without id", func(o *oauthServer) { o.meBody = `{"username":"x"}` }, []string{"no id"}},
		{"user-info not JSON", func(o *oauthServer) { o.meBody = `<html>` }, []string{"not a JSON object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOAuthServer(t)
			o.meBody = `{"id":"1"}`
			tt.setup(o)
			p := Discord("client-1", secret)
			p.TokenURL, p.UserInfoURL = o.srv.URL+"/token", o.srv.URL+"/me"
			_, err := p.Exchange(context.Background(), code, "https://app.test/cb", verifier)
			if !errors.Is(err, ErrOAuth2) {
				t.Fatalf("err = %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
			for _, s := range []string{secret, code, verifier, "at-SECRET-123"} {
				if strings.Contains(err.Error(), s) {
					t.Errorf("err leaks %q: %v", s, err)
				}
			}
		})
	}
	if _, err := (OAuth2Provider{Name: "discord"}).Exchange(context.Background(), "c", "r", "v"); !errors.Is(
		err,
		ErrOAuth2,
	) {
		t.Errorf("provider without endpoints: %v", err)
	}
	if _, err := Discord("c", "s").Exchange(context.Background(), "", "r", "v"); !errors.Is(err, ErrOAuth2) {
		t.Errorf("empty code: %v", err)
	}
}
