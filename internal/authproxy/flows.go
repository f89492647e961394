package authproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// call is one proxy request: the configuration it runs under and the way to the coordinator.
type call struct {
	s   *Server
	cfg *Config
}

// forward stamps body with the proxy key and sends it to the coordinator. A non-200 answer
// is returned as *upstream, which the proxy passes to its client unchanged.
func (c *call) forward(ctx context.Context, kind, op string, body []byte) ([]byte, error) {
	name, value, err := c.s.Configs.Stamp(c.cfg, body)
	if err != nil {
		return nil, err
	}
	status, resp, err := c.s.Coordinator.Do(ctx, kind, op, body, name, value)
	if err != nil {
		return nil, &apierr.Error{
			Code:        apierr.Unavailable,
			TurnkeyCode: "UNAVAILABLE",
			Message:     "the auth proxy could not reach the activity API; try again",
			Cause:       err,
		}
	}
	if status != http.StatusOK {
		return nil, &upstream{status: status, body: resp}
	}
	return resp, nil
}

// submit runs the activity op (type typ) in orgID with params and returns its result member.
func (c *call) submit(
	ctx context.Context,
	op, typ, orgID string,
	params any,
) (json.RawMessage, []json.RawMessage, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, nil, apierr.Internalf(err, "encoding %s parameters", op)
	}
	body := fmt.Appendf(
		nil,
		`{"type":%q,"timestampMs":"%d","organizationId":%q,"parameters":%s}`,
		typ,
		c.s.Now().UnixMilli(),
		orgID,
		p,
	)
	resp, err := c.forward(ctx, "submit", op, body)
	if err != nil {
		return nil, nil, err
	}
	var env struct {
		Activity struct {
			Status    string                     `json:"status"`
			Result    map[string]json.RawMessage `json:"result"`
			Failure   *apierr.Status             `json:"failure"`
			AppProofs []json.RawMessage          `json:"appProofs"`
		} `json:"activity"`
	}
	if err := json.Unmarshal(resp, &env); err != nil {
		return nil, nil, apierr.Internalf(err, "decoding the %s activity", op)
	}
	a := env.Activity
	switch a.Status {
	case "ACTIVITY_STATUS_COMPLETED":
	case "ACTIVITY_STATUS_FAILED":
		if a.Failure != nil {
			b, _ := json.Marshal(a.Failure)
			return nil, nil, &upstream{status: apierr.Code(a.Failure.Code).HTTPStatus(), body: b}
		}
		return nil, nil, apierr.Internalf(nil, "%s failed", op)
	default:
		return nil, nil, apierr.New(
			apierr.FailedPrecondition,
			"ACTIVITY_NOT_COMPLETED",
			"%s did not complete (status %s): the organization's policies require approvals the auth proxy cannot give",
			op,
			a.Status,
		)
	}
	for _, v := range a.Result {
		return v, a.AppProofs, nil
	}
	return nil, nil, apierr.Internalf(nil, "%s completed without a result", op)
}

// query runs the query op with params (organizationId is the configuration's organization
// unless params names one) and decodes the answer into out.
func (c *call) query(ctx context.Context, op string, params map[string]any, out any) error {
	if _, ok := params["organizationId"]; !ok {
		params["organizationId"] = c.cfg.OrgID
	}
	body, err := json.Marshal(params)
	if err != nil {
		return apierr.Internalf(err, "encoding %s", op)
	}
	resp, err := c.forward(ctx, "query", op, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(resp, out); err != nil {
		return apierr.Internalf(err, "decoding %s", op)
	}
	return nil
}

// decode reads a request body into v, a 400 naming the field on a type mismatch.
func decode(raw []byte, v any) error {
	if fe := wire.CheckJSON(raw); fe != nil {
		return apierr.Invalid(fe.Field, "%s", fe.Value)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(v); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			field := te.Field
			if field == "" {
				field = "body"
			}
			return apierr.Invalid(field, "expected %s, got JSON %s", te.Type.String(), te.Value)
		}
		if fe, ok := err.(*fieldErr); ok {
			return apierr.Invalid(fe.field, "%s", fe.msg)
		}
		return apierr.Invalid("body", "malformed JSON: %v", err)
	}
	return nil
}

// fieldErr is a decoding error of one of the lenient fields below.
type fieldErr struct{ field, msg string }

func (e *fieldErr) Error() string { return e.field + ": " + e.msg }

// first returns the first non-empty string.
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// ---- sign-up ----

// clientSig is a client signature as the swagger sends it (the v1ClientSignature object) or as
// the spec's sample does (`client_signature`: hex of a P-256 signature, DER or r‖s, over
// SHA-256 of the verification token).
type clientSig struct {
	obj *wire.ClientSignature
	hex string
}

func (c *clientSig) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &c.hex)
	}
	c.obj = new(wire.ClientSignature)
	return json.Unmarshal(b, c.obj)
}

// wire returns the signature as the activity takes it. A hex signature covers the
// verification token itself: its message is the token and its key the one the token is
// bound to.
func (c *clientSig) wire(field, token string) (*wire.ClientSignature, error) {
	if c == nil {
		return nil, nil
	}
	if c.obj != nil {
		return c.obj, nil
	}
	h := strings.TrimPrefix(strings.TrimSpace(c.hex), "0x")
	if !validSignatureHex(h) {
		return nil, apierr.Invalid(
			field,
			"must be a hex P-256 signature (64-byte r‖s or DER) over SHA-256 of the verification token",
		)
	}
	if token == "" {
		return nil, apierr.Invalid(field, "a signature over the verification token needs verificationToken")
	}
	claims, err := tokenClaims(token)
	if err != nil {
		return nil, apierr.Invalid("verificationToken", "%v", err)
	}
	if claims.PublicKey == "" {
		return nil, apierr.Invalid(
			field,
			"the verification token is not bound to a key (otp_verify was called without public_key), so there is nothing to sign with",
		)
	}
	return &wire.ClientSignature{
		PublicKey: claims.PublicKey,
		Scheme:    "CLIENT_SIGNATURE_SCHEME_API_P256",
		Message:   token,
		Signature: h,
	}, nil
}

func validSignatureHex(h string) bool {
	if len(h)%2 != 0 || len(h) < 16 || len(h) > 2*80 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return len(h) == 128 || strings.HasPrefix(h, "30")
}

type apiKeyIn struct {
	APIKeyName        string `json:"apiKeyName"`
	PublicKey         string `json:"publicKey"`
	PublicKeySnake    string `json:"public_key"`
	CurveType         string `json:"curveType"`
	ExpirationSeconds string `json:"expirationSeconds"`
}

// walletIn is the swagger's {walletName, accounts, mnemonicLength} or the spec's {path, curve}.
type walletIn struct {
	WalletName     string                     `json:"walletName"`
	Accounts       []wire.WalletAccountParams `json:"accounts"`
	MnemonicLength *int32                     `json:"mnemonicLength"`
	Path           string                     `json:"path"`
	Curve          string                     `json:"curve"`
	AddressFormat  string                     `json:"addressFormat"`
}

// Defaults of the spec's {path, curve} wallet shape: the account's address format and path
// when not given.
var curveDefaults = map[string]struct{ format, path string }{
	"CURVE_SECP256K1": {"ADDRESS_FORMAT_ETHEREUM", "m/44'/60'/0'/0/0"},
	"CURVE_ED25519":   {"ADDRESS_FORMAT_SOLANA", "m/44'/501'/0'/0'"},
	"CURVE_P256":      {"ADDRESS_FORMAT_COMPRESSED", "m/0'"},
}

// params turns the request's wallet into create_sub_organization's.
func (w *walletIn) params() (*wire.WalletParams, error) {
	if w == nil {
		return nil, nil
	}
	out := &wire.WalletParams{
		WalletName:     first(strings.TrimSpace(w.WalletName), "Default Wallet"),
		Accounts:       w.Accounts,
		MnemonicLength: w.MnemonicLength,
	}
	if w.Path == "" && w.Curve == "" {
		if out.Accounts == nil {
			out.Accounts = []wire.WalletAccountParams{}
		}
		return out, nil
	}
	if len(w.Accounts) > 0 {
		return nil, apierr.Invalid("wallet", "give either accounts or {path, curve}, not both")
	}
	curve := strings.ToUpper(strings.TrimSpace(w.Curve))
	if curve == "" {
		curve = "CURVE_SECP256K1"
	}
	// The spec's sample spells curves CURVE_TYPE_ED25519.
	if rest, ok := strings.CutPrefix(curve, "CURVE_TYPE_"); ok {
		curve = "CURVE_" + rest
	}
	d, ok := curveDefaults[curve]
	if !ok {
		return nil, apierr.Invalid(
			"wallet.curve",
			"unknown curve %q (CURVE_SECP256K1, CURVE_ED25519 or CURVE_P256; CURVE_TYPE_* spellings too)",
			w.Curve,
		)
	}
	acct := wire.WalletAccountParams{
		Curve:         wire.Curve(curve),
		PathFormat:    "PATH_FORMAT_BIP32",
		Path:          first(w.Path, d.path),
		AddressFormat: wire.AddressFormat(first(w.AddressFormat, d.format)),
	}
	out.Accounts = []wire.WalletAccountParams{acct}
	return out, nil
}

type signupRequest struct {
	UserEmail            string                       `json:"userEmail"`
	UserPhoneNumber      string                       `json:"userPhoneNumber"`
	UserTag              string                       `json:"userTag"`
	UserName             string                       `json:"userName"`
	OrganizationName     string                       `json:"organizationName"`
	VerificationToken    string                       `json:"verificationToken"`
	APIKeys              []apiKeyIn                   `json:"apiKeys"`
	Authenticators       []wire.AuthenticatorParamsV2 `json:"authenticators"`
	OAuthProviders       []wire.OauthProviderParamsV2 `json:"oauthProviders"`
	Wallet               *walletIn                    `json:"wallet"`
	ClientSignature      *clientSig                   `json:"clientSignature"`
	ClientSignatureSnake *clientSig                   `json:"client_signature"`
}

// signup (signup and signup_v2) creates a sub-organization of the configuration's organization
// whose one root user is the new user, with an optional wallet.
func (s *Server) signup(ctx context.Context, c *call, raw []byte) (any, error) {
	var in signupRequest
	if err := decode(raw, &in); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.UserTag) != "" {
		return nil, apierr.Unsupported("signup userTag (a new sub-organization has no user tags to refer to)")
	}
	now := s.Now()
	user := wire.RootUserParamsV5{
		UserName: first(
			strings.TrimSpace(in.UserName),
			in.UserEmail,
			in.UserPhoneNumber,
			fmt.Sprintf("user-%d", now.UnixMilli()),
		),
		UserEmail:       in.UserEmail,
		UserPhoneNumber: in.UserPhoneNumber,
		ApiKeys:         []wire.ApiKeyParamsV2{},
		Authenticators:  in.Authenticators,
		OauthProviders:  in.OAuthProviders,
	}
	if user.Authenticators == nil {
		user.Authenticators = []wire.AuthenticatorParamsV2{}
	}
	if user.OauthProviders == nil {
		user.OauthProviders = []wire.OauthProviderParamsV2{}
	}
	for i, k := range in.APIKeys {
		user.ApiKeys = append(user.ApiKeys, wire.ApiKeyParamsV2{
			ApiKeyName: first(strings.TrimSpace(k.APIKeyName), fmt.Sprintf("signup-key-%d", i+1)),
			PublicKey:  first(k.PublicKey, k.PublicKeySnake),
			CurveType:  wire.ApiKeyCurve(first(k.CurveType, "API_KEY_CURVE_P256")),
			// An empty expiration means a long-lived key.
			ExpirationSeconds: k.ExpirationSeconds,
		})
	}
	wallet, err := in.Wallet.params()
	if err != nil {
		return nil, err
	}
	sig := in.ClientSignature
	field := "clientSignature"
	if sig == nil {
		sig, field = in.ClientSignatureSnake, "client_signature"
	}
	ws, err := sig.wire(field, in.VerificationToken)
	if err != nil {
		return nil, err
	}
	intent := wire.CreateSubOrganizationIntentV8{
		SubOrganizationName: first(strings.TrimSpace(in.OrganizationName), fmt.Sprintf("sub-org-%d", now.UnixMilli())),
		RootUsers:           []wire.RootUserParamsV5{user},
		RootQuorumThreshold: 1,
		Wallet:              wallet,
		VerificationToken:   in.VerificationToken,
		ClientSignature:     ws,
	}
	res, proofs, err := c.submit(
		ctx,
		"create_sub_organization",
		"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8",
		c.cfg.OrgID,
		intent,
	)
	if err != nil {
		return nil, err
	}
	var r wire.CreateSubOrganizationResultV8
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, apierr.Internalf(err, "decoding create_sub_organization")
	}
	out := struct {
		OrganizationID string             `json:"organizationId"`
		UserID         string             `json:"userId"`
		Wallet         *wire.WalletResult `json:"wallet,omitempty"`
		AppProofs      []json.RawMessage  `json:"appProofs,omitempty"`
	}{OrganizationID: r.SubOrganizationId, Wallet: r.Wallet, AppProofs: proofs}
	if len(r.RootUserIds) > 0 {
		out.UserID = r.RootUserIds[0]
	}
	return out, nil
}

// ---- one-time codes ----

type otpInitRequest struct {
	OtpType            string `json:"otpType"`
	Contact            string `json:"contact"`
	EmailCustomization *struct {
		TemplateID string `json:"templateId"`
	} `json:"emailCustomization"`
}

// otpInit (otp_init, otp_init_v2) sends a code with the configuration's length, alphabet and
// message customization.
func (s *Server) otpInit(v2 bool) handlerFunc {
	return func(ctx context.Context, c *call, raw []byte) (any, error) {
		var in otpInitRequest
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		if in.OtpType == "" {
			return nil, apierr.Required("otpType")
		}
		if in.Contact == "" {
			return nil, apierr.Required("contact")
		}
		set := c.cfg.Settings
		provider, appName := "email", set.Email.AppName
		switch in.OtpType {
		case "OTP_TYPE_EMAIL":
		case "OTP_TYPE_SMS":
			provider, appName = "sms", first(set.SMS.AppName, set.Email.AppName)
		default:
			return nil, apierr.Invalid("otpType", "must be OTP_TYPE_EMAIL or OTP_TYPE_SMS, got %q", in.OtpType)
		}
		if !slices.Contains(set.EnabledProviders, provider) {
			return nil, apierr.New(
				apierr.PermissionDenied,
				"PROVIDER_NOT_ENABLED",
				"%s one-time codes are not enabled for this auth proxy (latchkey proxy update --enabled-providers)",
				provider,
			)
		}
		if appName == "" {
			appName = s.orgName(ctx, c.cfg.OrgID)
		}
		length, alpha := int32(set.OTPLength), set.OTPAlphanumeric
		intent := wire.InitOtpIntentV3{
			OtpType:                 in.OtpType,
			Contact:                 in.Contact,
			AppName:                 appName,
			OtpLength:               &length,
			Alphanumeric:            &alpha,
			SendFromEmailSenderName: set.Email.SenderName,
			ReplyToEmailAddress:     set.Email.ReplyTo,
		}
		ec := &wire.EmailCustomizationParamsV2{
			LogoUrl:           set.Email.LogoURL,
			TemplateVariables: set.Email.TemplateVariables,
		}
		if in.EmailCustomization != nil {
			ec.TemplateId = in.EmailCustomization.TemplateID
		}
		if *ec != (wire.EmailCustomizationParamsV2{}) {
			intent.EmailCustomization = ec
		}
		if set.SMS.Template != "" {
			intent.SmsCustomization = &wire.SmsCustomizationParams{Template: set.SMS.Template}
		}
		res, _, err := c.submit(ctx, "init_otp", "ACTIVITY_TYPE_INIT_OTP_V3", c.cfg.OrgID, intent)
		if err != nil {
			return nil, err
		}
		var r wire.InitOtpResultV2
		if err := json.Unmarshal(res, &r); err != nil {
			return nil, apierr.Internalf(err, "decoding init_otp")
		}
		if v2 {
			return map[string]string{"otpId": r.OtpId, "otpEncryptionTargetBundle": r.OtpEncryptionTargetBundle}, nil
		}
		return map[string]string{"otpId": r.OtpId}, nil
	}
}

// checkSubOrg refuses an organizationId that is not a sub-organization of the configuration's
// organization (the engine would refuse the proxy key there too, less clearly).
func (c *call) checkSubOrg(ctx context.Context, orgID string) error {
	var o *directory.Organization
	err := c.s.Configs.Store.View(ctx, func(r store.Reader) error {
		var err error
		o, err = directory.LoadOrganization(ctx, r, orgID)
		return err
	})
	if err != nil || o.ParentID != c.cfg.OrgID {
		if err != nil && apierr.From(err).Code != apierr.NotFound {
			return err
		}
		return apierr.Invalid("organizationId", "%q is not a sub-organization of this auth proxy's organization", orgID)
	}
	return nil
}

// orgName is the organization's name, the default app name of one-time-code messages.
func (s *Server) orgName(ctx context.Context, orgID string) string {
	name := "Latchkey"
	_ = s.Configs.Store.View(ctx, func(r store.Reader) error {
		if o, err := directory.LoadOrganization(ctx, r, orgID); err == nil && o.Name != "" {
			name = o.Name
		}
		return nil
	})
	return name
}

type otpVerifyRequest struct {
	OtpID          string `json:"otpId"`
	OtpCode        string `json:"otpCode"`
	PublicKey      string `json:"publicKey"`
	PublicKeySnake string `json:"public_key"`
}

// otpVerify checks a code given in the clear (the legacy verify_otp).
func (s *Server) otpVerify(ctx context.Context, c *call, raw []byte) (any, error) {
	var in otpVerifyRequest
	if err := decode(raw, &in); err != nil {
		return nil, err
	}
	if in.OtpID == "" {
		return nil, apierr.Required("otpId")
	}
	if in.OtpCode == "" {
		return nil, apierr.Required("otpCode")
	}
	intent := wire.VerifyOtpIntent{
		OtpId:     in.OtpID,
		OtpCode:   in.OtpCode,
		PublicKey: first(in.PublicKey, in.PublicKeySnake),
	}
	return c.verificationToken(ctx, "ACTIVITY_TYPE_VERIFY_OTP", intent)
}

type otpVerifyV2Request struct {
	OtpID              string `json:"otpId"`
	EncryptedOtpBundle string `json:"encryptedOtpBundle"`
}

// otpVerifyV2 checks a code encrypted to the init's target bundle (verify_otp V2).
func (s *Server) otpVerifyV2(ctx context.Context, c *call, raw []byte) (any, error) {
	var in otpVerifyV2Request
	if err := decode(raw, &in); err != nil {
		return nil, err
	}
	if in.OtpID == "" {
		return nil, apierr.Required("otpId")
	}
	if in.EncryptedOtpBundle == "" {
		return nil, apierr.Required("encryptedOtpBundle")
	}
	return c.verificationToken(
		ctx,
		"ACTIVITY_TYPE_VERIFY_OTP_V2",
		wire.VerifyOtpIntentV2{OtpId: in.OtpID, EncryptedOtpBundle: in.EncryptedOtpBundle},
	)
}

func (c *call) verificationToken(ctx context.Context, typ string, intent any) (any, error) {
	res, _, err := c.submit(ctx, "verify_otp", typ, c.cfg.OrgID, intent)
	if err != nil {
		return nil, err
	}
	var r wire.VerifyOtpResult
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, apierr.Internalf(err, "decoding verify_otp")
	}
	return map[string]string{"verificationToken": r.VerificationToken}, nil
}

type otpLoginRequest struct {
	VerificationToken    string     `json:"verificationToken"`
	PublicKey            string     `json:"publicKey"`
	PublicKeySnake       string     `json:"public_key"`
	InvalidateExisting   *bool      `json:"invalidateExisting"`
	OrganizationID       string     `json:"organizationId"`
	ClientSignature      *clientSig `json:"clientSignature"`
	ClientSignatureSnake *clientSig `json:"client_signature"`
}

// otpLogin (otp_login, otp_login_v2) logs the verified contact's user in to its
// sub-organization (given, or found by the token's contact) with the configuration's session
// lifetime.
func (s *Server) otpLogin(v2 bool) handlerFunc {
	return func(ctx context.Context, c *call, raw []byte) (any, error) {
		var in otpLoginRequest
		if err := decode(raw, &in); err != nil {
			return nil, err
		}
		pub := first(in.PublicKey, in.PublicKeySnake)
		if in.VerificationToken == "" {
			return nil, apierr.Required("verificationToken")
		}
		if pub == "" {
			return nil, apierr.Required("publicKey")
		}
		sig, field := in.ClientSignature, "clientSignature"
		if sig == nil {
			sig, field = in.ClientSignatureSnake, "client_signature"
		}
		if v2 && sig == nil {
			return nil, apierr.Required("clientSignature")
		}
		ws, err := sig.wire(field, in.VerificationToken)
		if err != nil {
			return nil, err
		}
		claims, err := tokenClaims(in.VerificationToken)
		if err != nil {
			return nil, apierr.Invalid("verificationToken", "%v", err)
		}
		orgID := in.OrganizationID
		if orgID != "" {
			if err := c.checkSubOrg(ctx, orgID); err != nil {
				return nil, err
			}
		} else {
			filter := "EMAIL"
			if claims.VerificationType == "OTP_TYPE_SMS" {
				filter = "PHONE_NUMBER"
			}
			if orgID, err = c.lookup(ctx, filter, claims.Contact); err != nil {
				return nil, err
			}
			if orgID == "" {
				return nil, apierr.NotFoundf("no sub-organization of this organization has a user with the verified contact; sign the user up first")
			}
		}
		exp := strconv.FormatInt(c.cfg.Settings.SessionExpirationSeconds, 10)
		var res json.RawMessage
		if ws != nil {
			res, _, err = c.submit(
				ctx,
				"otp_login",
				"ACTIVITY_TYPE_OTP_LOGIN_V2",
				orgID,
				wire.OtpLoginIntentV2{VerificationToken: in.VerificationToken,
					PublicKey: pub, ClientSignature: *ws, ExpirationSeconds: exp, InvalidateExisting: in.InvalidateExisting},
			)
		} else {
			res, _, err = c.submit(ctx, "otp_login", "ACTIVITY_TYPE_OTP_LOGIN", orgID, wire.OtpLoginIntent{VerificationToken: in.VerificationToken,
				PublicKey: pub, ExpirationSeconds: exp, InvalidateExisting: in.InvalidateExisting})
		}
		if err != nil {
			return nil, err
		}
		return session(res, "otp_login")
	}
}

func session(res json.RawMessage, op string) (any, error) {
	var r struct {
		Session string `json:"session"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, apierr.Internalf(err, "decoding %s", op)
	}
	return map[string]string{"session": r.Session}, nil
}

// ---- OAuth ----

type oauth2Request struct {
	Provider     string `json:"provider"`
	AuthCode     string `json:"authCode"`
	RedirectURI  string `json:"redirectUri"`
	CodeVerifier string `json:"codeVerifier"`
	Nonce        string `json:"nonce"`
	ClientID     string `json:"clientId"`
}

// oauth2Authenticate exchanges an OAuth 2.0 code through the organization's OAuth 2.0
// credential for the provider and client id (create_oauth2_credential), answering with the
// OIDC token Latchkey mints.
func (s *Server) oauth2Authenticate(ctx context.Context, c *call, raw []byte) (any, error) {
	var in oauth2Request
	if err := decode(raw, &in); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, v string }{{"provider", in.Provider}, {"authCode", in.AuthCode}, {"redirectUri", in.RedirectURI},
		{"codeVerifier", in.CodeVerifier}, {"nonce", in.Nonce}, {"clientId", in.ClientID}} {
		if f.v == "" {
			return nil, apierr.Required(f.name)
		}
	}
	if in.Provider != "OAUTH2_PROVIDER_X" && in.Provider != "OAUTH2_PROVIDER_DISCORD" {
		return nil, apierr.Invalid(
			"provider",
			"must be OAUTH2_PROVIDER_X or OAUTH2_PROVIDER_DISCORD, got %q",
			in.Provider,
		)
	}
	var creds wire.ListOauth2CredentialsResponse
	if err := c.query(ctx, "list_oauth2_credentials", map[string]any{}, &creds); err != nil {
		return nil, err
	}
	credID := ""
	for _, k := range creds.Oauth2Credentials {
		if string(k.Provider) == in.Provider && k.ClientId == in.ClientID {
			credID = k.Oauth2CredentialId
			break
		}
	}
	if credID == "" {
		return nil, apierr.Invalid(
			"clientId",
			"the organization has no OAuth 2.0 credential for %s with this client id (create one with create_oauth2_credential)",
			in.Provider,
		)
	}
	res, _, err := c.submit(
		ctx,
		"oauth2_authenticate",
		"ACTIVITY_TYPE_OAUTH2_AUTHENTICATE",
		c.cfg.OrgID,
		wire.Oauth2AuthenticateIntent{
			Oauth2CredentialId: credID, AuthCode: in.AuthCode, RedirectUri: in.RedirectURI, CodeVerifier: in.CodeVerifier, Nonce: in.Nonce},
	)
	if err != nil {
		return nil, err
	}
	var r struct {
		OidcToken string `json:"oidcToken"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, apierr.Internalf(err, "decoding oauth2_authenticate")
	}
	return map[string]string{"oidcToken": r.OidcToken}, nil
}

type oauthLoginRequest struct {
	OidcToken          string `json:"oidcToken"`
	PublicKey          string `json:"publicKey"`
	PublicKeySnake     string `json:"public_key"`
	InvalidateExisting *bool  `json:"invalidateExisting"`
	OrganizationID     string `json:"organizationId"`
}

// oauthLogin logs in the user an OIDC token names, in its sub-organization (given, or found by
// the token).
func (s *Server) oauthLogin(ctx context.Context, c *call, raw []byte) (any, error) {
	var in oauthLoginRequest
	if err := decode(raw, &in); err != nil {
		return nil, err
	}
	pub := first(in.PublicKey, in.PublicKeySnake)
	if in.OidcToken == "" {
		return nil, apierr.Required("oidcToken")
	}
	if pub == "" {
		return nil, apierr.Required("publicKey")
	}
	orgID := in.OrganizationID
	if orgID != "" {
		if err := c.checkSubOrg(ctx, orgID); err != nil {
			return nil, err
		}
	} else {
		var err error
		if orgID, err = c.lookup(ctx, "OIDC_TOKEN", in.OidcToken); err != nil {
			return nil, err
		}
		if orgID == "" {
			return nil, apierr.NotFoundf("no sub-organization of this organization has a user with this OIDC identity; sign the user up first")
		}
	}
	res, _, err := c.submit(
		ctx,
		"oauth_login",
		"ACTIVITY_TYPE_OAUTH_LOGIN",
		orgID,
		wire.OauthLoginIntent{OidcToken: in.OidcToken, PublicKey: pub,
			ExpirationSeconds: strconv.FormatInt(
				c.cfg.Settings.SessionExpirationSeconds,
				10,
			), InvalidateExisting: in.InvalidateExisting},
	)
	if err != nil {
		return nil, err
	}
	return session(res, "oauth_login")
}

// ---- look-up and configuration ----

// lookup is the first sub-organization of the configuration's organization matching a
// list_suborgs filter; "" when none does.
func (c *call) lookup(ctx context.Context, filterType, value string) (string, error) {
	var r wire.GetSubOrgIdsResponse
	if err := c.query(ctx, "list_suborgs", map[string]any{"filterType": filterType, "filterValue": value}, &r); err != nil {
		return "", err
	}
	if len(r.OrganizationIds) == 0 {
		return "", nil
	}
	return r.OrganizationIds[0], nil
}

type accountRequest struct {
	FilterType        string `json:"filterType"`
	FilterValue       string `json:"filterValue"`
	VerificationToken string `json:"verificationToken"`
	OidcToken         string `json:"oidcToken"`
}

// accountFilters are the filter types of /v1/account (docs/wire.md §7).
var accountFilters = []string{"EMAIL", "PHONE_NUMBER", "PUBLIC_KEY", "CREDENTIAL_ID", "OIDC_TOKEN", "OIDC_CLAIMS"}

// account finds the sub-organization of a user by e-mail, phone number, public key,
// credential id or OIDC token: {organizationId}, or {} when there is none.
func (s *Server) account(ctx context.Context, c *call, raw []byte) (any, error) {
	var in accountRequest
	if err := decode(raw, &in); err != nil {
		return nil, err
	}
	if in.FilterType == "" {
		return nil, apierr.Required("filterType")
	}
	if in.FilterValue == "" {
		return nil, apierr.Required("filterValue")
	}
	ft := strings.ToUpper(in.FilterType)
	if !slices.Contains(accountFilters, ft) {
		return nil, apierr.Invalid(
			"filterType",
			"must be one of %s, got %q",
			strings.Join(accountFilters, ", "),
			in.FilterType,
		)
	}
	if ft == "OIDC_CLAIMS" {
		return nil, apierr.Unsupported("account filterType OIDC_CLAIMS (look the user up with OIDC_TOKEN)")
	}
	orgID, err := c.lookup(ctx, ft, in.FilterValue)
	if err != nil {
		return nil, err
	}
	if orgID == "" {
		return struct{}{}, nil
	}
	return map[string]string{"organizationId": orgID}, nil
}

// walletKitConfig reports the configuration's providers and session and code settings.
func (s *Server) walletKitConfig(ctx context.Context, c *call, raw []byte) (any, error) {
	set := c.cfg.Settings
	ids := set.OAuthClientIDs
	if ids == nil {
		ids = map[string]string{}
	}
	providers := set.EnabledProviders
	if providers == nil {
		providers = []string{}
	}
	return struct {
		EnabledProviders         []string          `json:"enabledProviders"`
		SessionExpirationSeconds string            `json:"sessionExpirationSeconds"`
		OrganizationID           string            `json:"organizationId"`
		OAuthClientIDs           map[string]string `json:"oauthClientIds"`
		OAuthRedirectURL         string            `json:"oauthRedirectUrl,omitempty"`
		OTPAlphanumeric          bool              `json:"otpAlphanumeric"`
		OTPLength                string            `json:"otpLength"`
	}{providers, strconv.FormatInt(set.SessionExpirationSeconds, 10), c.cfg.OrgID, ids, set.OAuthRedirectURL, set.OTPAlphanumeric, strconv.Itoa(set.OTPLength)}, nil
}

// walletKitClientParams answers with no Turnstile site key: Latchkey asks for no captcha.
func (s *Server) walletKitClientParams(ctx context.Context, c *call, raw []byte) (any, error) {
	return struct{}{}, nil
}
