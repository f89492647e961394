package authproxy

import (
	"net/url"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/apierr"
)

// Providers are the login methods a configuration can enable, as wallet_kit_config names them.
var Providers = []string{"email", "sms", "passkey", "wallet", "google", "apple", "facebook", "discord", "x"}

// Limits of the settings.
const (
	DefaultSessionExpirationSeconds = 900
	MaxSessionExpirationSeconds     = 30 * 24 * 3600
	DefaultOTPLength                = 6
	MinOTPLength                    = 6
	MaxOTPLength                    = 9
	MaxAllowedOrigins               = 64
	maxTextLen                      = 512
)

// EmailCustomization is how the proxy's one-time-code e-mails look (notify.OTPEmail).
type EmailCustomization struct {
	AppName    string `json:"appName,omitempty"`
	LogoURL    string `json:"logoUrl,omitempty"`
	SenderName string `json:"senderName,omitempty"`
	ReplyTo    string `json:"replyTo,omitempty"`
	// TemplateVariables is a JSON object of template values (notify.ParseTemplateVariables).
	TemplateVariables string `json:"templateVariables,omitempty"`
}

// SMSCustomization is how the proxy's one-time-code text messages look.
type SMSCustomization struct {
	AppName string `json:"appName,omitempty"`
	// Template refers to the code as {{.OtpCode}} (notify.RenderOTPSMSTemplate).
	Template string `json:"template,omitempty"`
}

// Settings are what an operator sets for an organization's auth proxy.
type Settings struct {
	Enabled bool `json:"enabled"`
	// AllowedOrigins are exact origins (scheme://host[:port]); ["*"] (the default) allows all.
	AllowedOrigins           []string           `json:"allowedOrigins"`
	SessionExpirationSeconds int64              `json:"sessionExpirationSeconds"`
	EnabledProviders         []string           `json:"enabledProviders"`
	OTPLength                int                `json:"otpLength"`
	OTPAlphanumeric          bool               `json:"otpAlphanumeric"`
	Email                    EmailCustomization `json:"email"`
	SMS                      SMSCustomization   `json:"sms"`
	// OAuthClientIDs maps a provider (google, apple, facebook, discord, x) to its client id.
	OAuthClientIDs   map[string]string `json:"oauthClientIds,omitempty"`
	OAuthRedirectURL string            `json:"oauthRedirectUrl,omitempty"`
}

// DefaultSettings are the settings of a newly enabled proxy.
func DefaultSettings() Settings {
	return Settings{
		Enabled:                  true,
		AllowedOrigins:           []string{"*"},
		SessionExpirationSeconds: DefaultSessionExpirationSeconds,
		EnabledProviders:         []string{"email", "passkey"},
		OTPLength:                DefaultOTPLength,
	}
}

// Normalize checks s and returns it in canonical form (origins without a trailing slash,
// providers lower case, sorted and unique). Errors are apierr.Invalid naming the field.
func (s Settings) Normalize() (Settings, error) {
	out := s
	origins, err := normalizeOrigins(s.AllowedOrigins)
	if err != nil {
		return s, err
	}
	out.AllowedOrigins = origins
	if s.SessionExpirationSeconds < 60 || s.SessionExpirationSeconds > MaxSessionExpirationSeconds {
		return s, apierr.Invalid(
			"sessionExpirationSeconds",
			"must be between 60 and %d, got %d",
			MaxSessionExpirationSeconds,
			s.SessionExpirationSeconds,
		)
	}
	if s.OTPLength < MinOTPLength || s.OTPLength > MaxOTPLength {
		return s, apierr.Invalid(
			"otpLength",
			"must be between %d and %d, got %d",
			MinOTPLength,
			MaxOTPLength,
			s.OTPLength,
		)
	}
	out.EnabledProviders = nil
	for _, p := range s.EnabledProviders {
		p = strings.ToLower(strings.TrimSpace(p))
		if !slices.Contains(Providers, p) {
			return s, apierr.Invalid(
				"enabledProviders",
				"unknown provider %q (known: %s)",
				p,
				strings.Join(Providers, ", "),
			)
		}
		if !slices.Contains(out.EnabledProviders, p) {
			out.EnabledProviders = append(out.EnabledProviders, p)
		}
	}
	slices.Sort(out.EnabledProviders)
	out.OAuthClientIDs = map[string]string{}
	for p, id := range s.OAuthClientIDs {
		p = strings.ToLower(strings.TrimSpace(p))
		if !slices.Contains(Providers, p) || p == "email" || p == "sms" || p == "passkey" || p == "wallet" {
			return s, apierr.Invalid("oauthClientIds", "%q is not an OAuth provider", p)
		}
		if id = strings.TrimSpace(id); id == "" || len(id) > maxTextLen {
			return s, apierr.Invalid("oauthClientIds."+p, "must be 1 to %d characters", maxTextLen)
		}
		out.OAuthClientIDs[p] = id
	}
	if s.OAuthRedirectURL != "" {
		if err := checkURL("oauthRedirectUrl", s.OAuthRedirectURL, false); err != nil {
			return s, err
		}
	}
	if s.Email.LogoURL != "" {
		if err := checkURL("email.logoUrl", s.Email.LogoURL, false); err != nil {
			return s, err
		}
	}
	for f, v := range map[string]string{"email.appName": s.Email.AppName, "email.senderName": s.Email.SenderName,
		"email.replyTo": s.Email.ReplyTo, "sms.appName": s.SMS.AppName, "sms.template": s.SMS.Template} {
		if len(v) > maxTextLen || strings.ContainsAny(v, "\r\n") {
			return s, apierr.Invalid(f, "must be one line of at most %d bytes", maxTextLen)
		}
	}
	if len(s.Email.TemplateVariables) > 8*maxTextLen {
		return s, apierr.Invalid("email.templateVariables", "at most %d bytes", 8*maxTextLen)
	}
	return out, nil
}

// AllowsOrigin reports whether origin may call the proxy under s.
func (s Settings) AllowsOrigin(origin string) bool {
	for _, o := range s.AllowedOrigins {
		if o == "*" || o == strings.TrimSuffix(origin, "/") {
			return true
		}
	}
	return false
}

func normalizeOrigins(in []string) ([]string, error) {
	if len(in) == 0 {
		return []string{"*"}, nil
	}
	if len(in) > MaxAllowedOrigins {
		return nil, apierr.Invalid("allowedOrigins", "at most %d origins", MaxAllowedOrigins)
	}
	var out []string
	for _, o := range in {
		o = strings.TrimSuffix(strings.TrimSpace(o), "/")
		if o == "*" {
			if len(in) > 1 {
				return nil, apierr.Invalid(
					"allowedOrigins",
					`"*" allows every origin and cannot be combined with others`,
				)
			}
			return []string{"*"}, nil
		}
		if strings.Contains(o, "*") {
			return nil, apierr.Invalid(
				"allowedOrigins",
				"%q: partial wildcards are not supported; list exact origins",
				o,
			)
		}
		if err := checkURL("allowedOrigins", o, true); err != nil {
			return nil, err
		}
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out, nil
}

// checkURL accepts an absolute http(s) URL; originOnly refuses a path, query or fragment.
func checkURL(field, raw string, originOnly bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return apierr.Invalid(field, "%q is not an absolute http(s) URL", raw)
	}
	if originOnly && (u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "") {
		return apierr.Invalid(field, "%q must be an origin (scheme://host[:port]) without a path", raw)
	}
	return nil
}
