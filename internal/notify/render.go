package notify

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"net/url"
	"regexp"
	"strings"
	texttemplate "text/template"
	"unicode/utf8"
)

//go:embed templates
var templateFS embed.FS

var (
	otpHTML = htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/otp_email.html"))
	otpText = texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/otp_email.txt"))

	linkHTML = htmltemplate.Must(htmltemplate.ParseFS(templateFS, "templates/link_email.html"))
	linkText = texttemplate.Must(texttemplate.ParseFS(templateFS, "templates/link_email.txt"))
)

// OTPEmail is everything the one-time-code e-mail can say.
type OTPEmail struct {
	// To is the recipient's bare address.
	To string
	// AppName names the application (required; appears in the subject).
	AppName string
	// LogoURL is an optional absolute https (or http) URL of a PNG logo.
	LogoURL string
	// Code is the one-time code.
	Code string
	// ExpiryMinutes is how long the code lives (default 5).
	ExpiryMinutes int
	// SenderName overrides the sender's display name; ReplyTo adds a
	// Reply-To address.
	SenderName, ReplyTo string
	// TemplateValues customize the wording. The built-in template reads
	// "greeting", "intro" and "footer"; other keys are accepted and ignored.
	// Values are text: HTML in them is escaped, never interpreted.
	TemplateValues map[string]string
}

// Limits on template values, so a caller cannot turn the e-mail into a
// payload of its own.
const (
	maxTemplateValues     = 16
	maxTemplateValueBytes = 500
)

var templateKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

// ParseTemplateVariables decodes the wire's templateVariables, a JSON object
// of string (or number or boolean) values, into TemplateValues.
func ParseTemplateVariables(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("%w: templateVariables must be a JSON object", ErrInvalidMessage)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			out[k] = v
		case float64, bool:
			out[k] = fmt.Sprint(v)
		default:
			return nil, fmt.Errorf("%w: templateVariables value %q must be a string, number or boolean", ErrInvalidMessage, clip(k, 64))
		}
	}
	return out, checkTemplateValues(out)
}

func checkTemplateValues(values map[string]string) error {
	if len(values) > maxTemplateValues {
		return fmt.Errorf("%w: at most %d template values", ErrInvalidMessage, maxTemplateValues)
	}
	for k, v := range values {
		if !templateKey.MatchString(k) {
			return fmt.Errorf(
				"%w: template value name %q must be a letter followed by letters, digits or _",
				ErrInvalidMessage,
				clip(k, 64),
			)
		}
		if len(v) > maxTemplateValueBytes || !utf8.ValidString(v) {
			return fmt.Errorf(
				"%w: template value %q must be valid UTF-8 of at most %d bytes",
				ErrInvalidMessage,
				k,
				maxTemplateValueBytes,
			)
		}
	}
	return nil
}

// RenderOTPEmail renders the one-time-code e-mail, both parts.
func RenderOTPEmail(c OTPEmail) (Message, error) {
	if c.Code == "" {
		return Message{}, fmt.Errorf("%w: no code", ErrInvalidMessage)
	}
	if c.ExpiryMinutes < 0 {
		return Message{}, fmt.Errorf("%w: negative expiry", ErrInvalidMessage)
	}
	if c.ExpiryMinutes == 0 {
		c.ExpiryMinutes = 5
	}
	if err := checkCommon(c.AppName, c.LogoURL, c.SenderName, c.TemplateValues); err != nil {
		return Message{}, err
	}
	subject := "Your " + c.AppName + " verification code"
	data := struct {
		Subject, AppName, LogoURL, Code string
		ExpiryMinutes                   int
		Greeting, Intro, Footer         string
		Values                          map[string]string
	}{
		Subject: subject, AppName: c.AppName, LogoURL: c.LogoURL, Code: c.Code,
		ExpiryMinutes: c.ExpiryMinutes,
		Greeting:      valueOr(c.TemplateValues, "greeting", "Hello,"),
		Intro:         valueOr(c.TemplateValues, "intro", "Use this code to sign in to "+c.AppName+":"),
		Footer:        c.TemplateValues["footer"],
		Values:        c.TemplateValues,
	}
	var h, t bytes.Buffer
	if err := otpHTML.Execute(&h, data); err != nil {
		return Message{}, fmt.Errorf("notify: rendering the e-mail: %w", err)
	}
	if err := otpText.Execute(&t, data); err != nil {
		return Message{}, fmt.Errorf("notify: rendering the e-mail: %w", err)
	}
	m := Message{
		To: c.To, Subject: subject, Text: t.String(), HTML: h.String(),
		FromName: c.SenderName, ReplyTo: c.ReplyTo,
	}
	if err := validateMessage(m); err != nil {
		return Message{}, err
	}
	return m, nil
}

// checkCommon validates the customization both e-mails share.
func checkCommon(appName, logoURL, senderName string, values map[string]string) error {
	if strings.TrimSpace(appName) == "" {
		return fmt.Errorf("%w: app name is required", ErrInvalidMessage)
	}
	if strings.ContainsAny(appName, "\r\n") || len(appName) > 200 {
		return fmt.Errorf("%w: app name must be one line of at most 200 bytes", ErrInvalidMessage)
	}
	if strings.ContainsAny(senderName, "\r\n") {
		return fmt.Errorf("%w: sender name contains a line break", ErrInvalidMessage)
	}
	if logoURL != "" {
		u, err := url.Parse(logoURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("%w: logo URL must be an absolute https URL", ErrInvalidMessage)
		}
	}
	return checkTemplateValues(values)
}

// LinkEmail is the sign-in e-mail that carries a credential bundle
// (email_auth, recovery): as a magic link when MagicLinkTemplate is set,
// otherwise as text to paste into the application.
type LinkEmail struct {
	To, AppName, LogoURL string
	// MagicLinkTemplate is an absolute https URL with one %s, where the
	// (query-escaped) bundle goes, e.g. "https://dapp.xyz/auth?b=%s".
	MagicLinkTemplate string
	// Bundle is the credential bundle.
	Bundle string
	// ExpiryMinutes defaults to 15.
	ExpiryMinutes       int
	SenderName, ReplyTo string
	// TemplateValues as in OTPEmail ("greeting", "intro", "footer").
	TemplateValues map[string]string
}

// MagicLink interpolates bundle into a magic-link template.
func MagicLink(template, bundle string) (string, error) {
	if strings.Count(template, "%s") != 1 {
		return "", fmt.Errorf("%w: magic link template must contain exactly one %%s", ErrInvalidMessage)
	}
	link := strings.Replace(template, "%s", url.QueryEscape(bundle), 1)
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("%w: magic link template must be an absolute https URL", ErrInvalidMessage)
	}
	return link, nil
}

// RenderLinkEmail renders the sign-in e-mail, both parts.
func RenderLinkEmail(c LinkEmail) (Message, error) {
	if err := checkCommon(c.AppName, c.LogoURL, c.SenderName, c.TemplateValues); err != nil {
		return Message{}, err
	}
	if c.Bundle == "" {
		return Message{}, fmt.Errorf("%w: no credential bundle", ErrInvalidMessage)
	}
	if c.ExpiryMinutes < 0 {
		return Message{}, fmt.Errorf("%w: negative expiry", ErrInvalidMessage)
	}
	if c.ExpiryMinutes == 0 {
		c.ExpiryMinutes = 15
	}
	link := ""
	intro := "Copy this credential into " + c.AppName + " to sign in:"
	if c.MagicLinkTemplate != "" {
		var err error
		if link, err = MagicLink(c.MagicLinkTemplate, c.Bundle); err != nil {
			return Message{}, err
		}
		intro = "Use this link to sign in to " + c.AppName + ":"
	}
	subject := "Sign in to " + c.AppName
	data := struct {
		Subject, AppName, LogoURL, Link, Bundle string
		ExpiryMinutes                           int
		Greeting, Intro, Footer                 string
		Values                                  map[string]string
	}{
		Subject: subject, AppName: c.AppName, LogoURL: c.LogoURL, Link: link, Bundle: c.Bundle,
		ExpiryMinutes: c.ExpiryMinutes,
		Greeting:      valueOr(c.TemplateValues, "greeting", "Hello,"),
		Intro:         valueOr(c.TemplateValues, "intro", intro),
		Footer:        c.TemplateValues["footer"],
		Values:        c.TemplateValues,
	}
	var h, t bytes.Buffer
	if err := linkHTML.Execute(&h, data); err != nil {
		return Message{}, fmt.Errorf("notify: rendering the e-mail: %w", err)
	}
	if err := linkText.Execute(&t, data); err != nil {
		return Message{}, fmt.Errorf("notify: rendering the e-mail: %w", err)
	}
	m := Message{
		To:       c.To,
		Subject:  subject,
		Text:     t.String(),
		HTML:     h.String(),
		FromName: c.SenderName,
		ReplyTo:  c.ReplyTo,
	}
	if err := validateMessage(m); err != nil {
		return Message{}, err
	}
	return m, nil
}

func valueOr(m map[string]string, k, def string) string {
	if v, ok := m[k]; ok && v != "" {
		return v
	}
	return def
}

// RenderOTPSMS renders the one-time-code text message; the caller sets To.
func RenderOTPSMS(appName, code string) SMS {
	appName = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, appName))
	if appName == "" {
		return SMS{Body: code + " is your verification code. Do not share it with anyone."}
	}
	return SMS{Body: code + " is your " + appName + " verification code. Do not share it with anyone."}
}

// maxSMSBytes bounds a rendered SMS (ten concatenated segments).
const maxSMSBytes = 1600

// errTooLong stops a template that writes too much.
var errTooLong = fmt.Errorf("%w: SMS template renders more than %d bytes", ErrInvalidMessage, maxSMSBytes)

type boundedWriter struct {
	buf bytes.Buffer
	n   int
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.n {
		return 0, errTooLong
	}
	return w.buf.Write(p)
}

// RenderOTPSMSTemplate renders the wire's smsCustomization template, a Go
// text/template that refers to {{.OtpCode}} (and may refer to {{.AppName}}).
// An empty template gives RenderOTPSMS. The output is bounded, and it must
// contain the code.
func RenderOTPSMSTemplate(tmpl, appName, code string) (SMS, error) {
	if strings.TrimSpace(tmpl) == "" {
		return RenderOTPSMS(appName, code), nil
	}
	if len(tmpl) > maxSMSBytes {
		return SMS{}, fmt.Errorf("%w: SMS template longer than %d bytes", ErrInvalidMessage, maxSMSBytes)
	}
	t, err := texttemplate.New("sms").Option("missingkey=error").Parse(tmpl)
	if err != nil {
		return SMS{}, fmt.Errorf("%w: SMS template does not parse", ErrInvalidMessage)
	}
	w := &boundedWriter{n: maxSMSBytes}
	if err := t.Execute(w, struct{ OtpCode, AppName string }{code, appName}); err != nil {
		if errors.Is(err, errTooLong) {
			return SMS{}, errTooLong
		}
		return SMS{}, fmt.Errorf("%w: SMS template does not render", ErrInvalidMessage)
	}
	body := strings.TrimSpace(w.buf.String())
	if !strings.Contains(body, code) {
		return SMS{}, fmt.Errorf("%w: SMS template must include {{.OtpCode}}", ErrInvalidMessage)
	}
	return SMS{Body: body}, nil
}
