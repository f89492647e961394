package oidc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Default endpoints of the OAuth 2.0 providers without id_tokens.
const (
	DiscordTokenURL    = "https://discord.com/api/oauth2/token"
	DiscordUserInfoURL = "https://discord.com/api/users/@me"
	XTokenURL          = "https://api.x.com/2/oauth2/token"
	XUserInfoURL       = "https://api.x.com/2/users/me"
)

// ClientAuth is how the client authenticates at the token endpoint.
type ClientAuth int

const (
	// ClientAuthAuto is ClientAuthBasic for X and ClientAuthPost otherwise.
	ClientAuthAuto ClientAuth = iota
	// ClientAuthPost sends client_id and client_secret in the form
	// (client_secret_post; Discord).
	ClientAuthPost
	// ClientAuthBasic sends them as HTTP basic auth (client_secret_basic; X).
	ClientAuthBasic
)

// ErrOAuth2 is wrapped by every error of Exchange. None contains the client
// secret, the authorization code, the code verifier or the access token.
var ErrOAuth2 = errors.New("oidc: oauth2 exchange failed")

// OAuth2Provider exchanges an authorization code (with PKCE) for the user's
// identity. Every field may be overridden, so tests can point the endpoints
// at a local server.
type OAuth2Provider struct {
	Name, TokenURL, UserInfoURL, ClientID, ClientSecret string
	// ClientAuth picks the token endpoint's client authentication.
	ClientAuth ClientAuth
	// HTTPClient defaults to a client with a 10 s timeout.
	HTTPClient *http.Client
}

// UserInfo is who the provider says the user is.
type UserInfo struct {
	ID, Email, Name string
	// EmailVerified is true when the provider says the e-mail is verified.
	EmailVerified bool
}

// Discord returns the Discord provider with its default endpoints.
func Discord(clientID, clientSecret string) OAuth2Provider {
	return OAuth2Provider{Name: "discord", TokenURL: DiscordTokenURL, UserInfoURL: DiscordUserInfoURL,
		ClientID: clientID, ClientSecret: clientSecret, ClientAuth: ClientAuthPost}
}

// X returns the X (Twitter) provider with its default endpoints.
func X(clientID, clientSecret string) OAuth2Provider {
	return OAuth2Provider{Name: "x", TokenURL: XTokenURL, UserInfoURL: XUserInfoURL,
		ClientID: clientID, ClientSecret: clientSecret, ClientAuth: ClientAuthBasic}
}

var defaultOAuthClient = &http.Client{
	Timeout: 10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// Exchange trades code for an access token at TokenURL, then reads the user
// from UserInfoURL with it.
func (p OAuth2Provider) Exchange(ctx context.Context, code, redirectURI, codeVerifier string) (*UserInfo, error) {
	if p.TokenURL == "" || p.UserInfoURL == "" || p.ClientID == "" {
		return nil, fmt.Errorf("%w: provider %q needs a token URL, a user-info URL and a client id", ErrOAuth2, p.Name)
	}
	if code == "" || redirectURI == "" || codeVerifier == "" {
		return nil, fmt.Errorf("%w: code, redirect URI and code verifier are required", ErrOAuth2)
	}
	secrets := []string{p.ClientSecret, code, codeVerifier}
	client := p.HTTPClient
	if client == nil {
		client = defaultOAuthClient
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {redirectURI},
		"code_verifier": {codeVerifier},
		"client_id":     {p.ClientID},
	}
	auth := p.ClientAuth
	if auth == ClientAuthAuto {
		auth = ClientAuthPost
		if strings.EqualFold(p.Name, "x") {
			auth = ClientAuthBasic
		}
	}
	if auth == ClientAuthPost && p.ClientSecret != "" {
		form.Set("client_secret", p.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: bad token URL", ErrOAuth2, p.Name)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if auth == ClientAuthBasic && p.ClientSecret != "" {
		// RFC 6749 §2.3.1: form-encode both halves before basic auth.
		req.SetBasicAuth(url.QueryEscape(p.ClientID), url.QueryEscape(p.ClientSecret))
	}
	body, status, err := do(client, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s token request: %s", ErrOAuth2, p.Name, redact(err.Error(), secrets))
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf(
			"%w: %s token endpoint answered HTTP %d%s",
			ErrOAuth2,
			p.Name,
			status,
			oauthError(body, secrets),
		)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" {
		return nil, fmt.Errorf("%w: %s token endpoint returned no access token", ErrOAuth2, p.Name)
	}
	if tok.TokenType != "" && !strings.EqualFold(tok.TokenType, "bearer") {
		return nil, fmt.Errorf("%w: %s token type %q is not bearer", ErrOAuth2, p.Name, clip(tok.TokenType, 20))
	}
	secrets = append(secrets, tok.AccessToken)

	req, err = http.NewRequestWithContext(ctx, http.MethodGet, p.UserInfoURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: bad user-info URL", ErrOAuth2, p.Name)
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	req.Header.Set("Accept", "application/json")
	body, status, err = do(client, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s user-info request: %s", ErrOAuth2, p.Name, redact(err.Error(), secrets))
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf(
			"%w: %s user-info endpoint answered HTTP %d%s",
			ErrOAuth2,
			p.Name,
			status,
			oauthError(body, secrets),
		)
	}
	return parseUserInfo(p.Name, body)
}

func do(c *http.Client, req *http.Request) ([]byte, int, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes))
	if err != nil {
		return nil, 0, err
	}
	return body, resp.StatusCode, nil
}

// oauthError renders RFC 6749 §5.2 errors and X's problem documents.
func oauthError(body []byte, secrets []string) string {
	var e struct {
		Error       any    `json:"error"`
		Description string `json:"error_description"`
		Message     string `json:"message"`
		Title       string `json:"title"`
		Detail      string `json:"detail"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	var parts []string
	if s, ok := e.Error.(string); ok && s != "" {
		parts = append(parts, s)
	}
	for _, s := range []string{e.Description, e.Message, e.Title, e.Detail} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + clip(redact(strings.Join(parts, ": "), secrets), 300)
}

func parseUserInfo(name string, body []byte) (*UserInfo, error) {
	// Only a few members are read: the object's members are kept as raw JSON, and only those are
	// decoded, so a large or deep value elsewhere costs a copy, not a tree of Go values. Its
	// nesting is bounded first all the same, as an id_token's claims are (real user objects nest
	// two deep, X's inside its "data").
	if jsonDepth(body) > MaxJSONDepth {
		return nil, fmt.Errorf("%w: %s user info nests deeper than %d levels", ErrOAuth2, name, MaxJSONDepth)
	}
	var top map[string]json.RawMessage
	if json.NewDecoder(bytes.NewReader(body)).Decode(&top) != nil || top == nil {
		return nil, fmt.Errorf("%w: %s user info is not a JSON object", ErrOAuth2, name)
	}
	obj := top
	// X wraps the user in {"data": {...}}.
	var data map[string]json.RawMessage
	if d := bytes.TrimSpace(top["data"]); len(d) > 0 && d[0] == '{' && json.Unmarshal(d, &data) == nil {
		obj = data
	}
	u := &UserInfo{}
	var id any
	dec := json.NewDecoder(bytes.NewReader(obj["id"]))
	dec.UseNumber()
	if dec.Decode(&id) == nil {
		switch id := id.(type) {
		case string:
			u.ID = id
		case json.Number:
			u.ID = id.String()
		}
	}
	if u.ID == "" {
		return nil, fmt.Errorf("%w: %s user info has no id", ErrOAuth2, name)
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(obj[k], &s)
		return s
	}
	flag := func(k string) bool {
		var b bool
		_ = json.Unmarshal(obj[k], &b)
		return b
	}
	u.Email = str("email")
	if u.Email == "" {
		u.Email = str("confirmed_email") // X, with user.fields=confirmed_email
		u.EmailVerified = u.Email != ""
	} else {
		// Discord: "verified" is about the e-mail address.
		u.EmailVerified = flag("verified") || flag("email_verified")
	}
	for _, k := range []string{"name", "global_name", "username"} {
		if s := str(k); s != "" {
			u.Name = s
			break
		}
	}
	return u, nil
}

func redact(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
			if esc := url.QueryEscape(sec); esc != sec {
				s = strings.ReplaceAll(s, esc, "[redacted]")
			}
		}
	}
	return s
}
