package notify

import (
	"errors"
	"strings"
	"testing"
)

func TestRenderOTPEmail(t *testing.T) {
	m, err := RenderOTPEmail(OTPEmail{To: "a@b.test", AppName: "Acme", Code: "1234"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "Your Acme verification code" || m.FromName != "" || m.ReplyTo != "" {
		t.Errorf("%+v", m)
	}
	for _, part := range []string{m.Text, m.HTML} {
		for _, want := range []string{"1234", "5 minutes", "Acme"} {
			if !strings.Contains(part, want) {
				t.Errorf("part lacks %q:\n%s", want, part)
			}
		}
	}
	if strings.Contains(m.HTML, "<img") {
		t.Error("logo rendered without a logo URL")
	}
	one, err := RenderOTPEmail(OTPEmail{To: "a@b.test", AppName: "Acme", Code: "1234", ExpiryMinutes: 1})
	if err != nil || !strings.Contains(one.Text, "1 minute.") {
		t.Errorf("singular minute: %v\n%s", err, one.Text)
	}
	// The app name is text in the HTML part, never markup.
	x, err := RenderOTPEmail(OTPEmail{To: "a@b.test", AppName: `<script>alert(1)</script>`, Code: "1"})
	if err != nil || strings.Contains(x.HTML, "<script>") {
		t.Errorf("app name not escaped: %v", err)
	}
}

func TestRenderOTPEmailRefusals(t *testing.T) {
	base := OTPEmail{To: "a@b.test", AppName: "Acme", Code: "1234"}
	tests := []struct {
		name string
		edit func(*OTPEmail)
	}{
		{"no app name", func(c *OTPEmail) { c.AppName = " " }},
		{"no code", func(c *OTPEmail) { c.Code = "" }},
		{"javascript logo", func(c *OTPEmail) { c.LogoURL = "javascript:alert(1)" }},
		{"relative logo", func(c *OTPEmail) { c.LogoURL = "/logo.png" }},
		{"bad recipient", func(c *OTPEmail) { c.To = "nobody" }},
		{"bad reply-to", func(c *OTPEmail) { c.ReplyTo = "x\r\nBcc: y@z.test" }},
		{"sender name with CRLF", func(c *OTPEmail) { c.SenderName = "a\r\nb" }},
		{"negative expiry", func(c *OTPEmail) { c.ExpiryMinutes = -1 }},
		{"bad value name", func(c *OTPEmail) { c.TemplateValues = map[string]string{"a b": "x"} }},
		{"long value", func(c *OTPEmail) { c.TemplateValues = map[string]string{"footer": strings.Repeat("x", 501)} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.edit(&c)
			if _, err := RenderOTPEmail(c); !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("err = %v, want ErrInvalidMessage", err)
			}
		})
	}
}

func TestParseTemplateVariables(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]string
		wantErr bool
	}{
		{"", nil, false},
		{`{"greeting":"Hi","n":3,"b":true}`, map[string]string{"greeting": "Hi", "n": "3", "b": "true"}, false},
		{`[1]`, nil, true},
		{`{"x":{"y":1}}`, nil, true},
		{`{"bad key":"v"}`, nil, true},
	}
	for _, tt := range tests {
		got, err := ParseTemplateVariables(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v", tt.in, err)
			continue
		}
		if !tt.wantErr && len(got) != len(tt.want) {
			t.Errorf("%q: %v", tt.in, got)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%q: %s = %q", tt.in, k, got[k])
			}
		}
	}
}

func TestRenderOTPSMS(t *testing.T) {
	if got := RenderOTPSMS("Acme", "ABC").Body; got != "ABC is your Acme verification code. Do not share it with anyone." {
		t.Errorf("%q", got)
	}
	if got := RenderOTPSMS("", "ABC").Body; got != "ABC is your verification code. Do not share it with anyone." {
		t.Errorf("%q", got)
	}
	if got := RenderOTPSMS("A\ncme", "ABC").Body; strings.Contains(got, "\n") {
		t.Errorf("%q", got)
	}
}

func TestRenderOTPSMSTemplate(t *testing.T) {
	tests := []struct {
		tmpl, want string
		wantErr    bool
	}{
		{"", "C0DE is your Acme verification code. Do not share it with anyone.", false},
		{"Your {{.AppName}} code: {{.OtpCode}}", "Your Acme code: C0DE", false},
		{"no code here", "", true},
		{"{{.Nope}}", "", true},
		{"{{", "", true},
		{"{{range 100000}}x{{end}}{{.OtpCode}}", "", true},
		{"{{.OtpCode | printf \"%q\"}}", `"C0DE"`, false},
	}
	for _, tt := range tests {
		got, err := RenderOTPSMSTemplate(tt.tmpl, "Acme", "C0DE")
		if (err != nil) != tt.wantErr || got.Body != tt.want {
			t.Errorf("%q: %q, %v", tt.tmpl, got.Body, err)
		}
		if err != nil && strings.Contains(err.Error(), "C0DE") {
			t.Errorf("%q: error leaks the code: %v", tt.tmpl, err)
		}
	}
}

func TestRenderLinkEmail(t *testing.T) {
	bundle := "3DZhYvBjNL4Q2nwVyUK8ux7SbEd9aZrZ+x"
	m, err := RenderLinkEmail(
		LinkEmail{To: "a@b.test", AppName: "Acme", MagicLinkTemplate: "https://dapp.test/auth?b=%s", Bundle: bundle},
	)
	if err != nil {
		t.Fatal(err)
	}
	link := "https://dapp.test/auth?b=3DZhYvBjNL4Q2nwVyUK8ux7SbEd9aZrZ%2Bx"
	if m.Subject != "Sign in to Acme" || !strings.Contains(m.Text, link) ||
		!strings.Contains(m.HTML, `href="`+link+`"`) ||
		!strings.Contains(m.Text, "15 minutes") {
		t.Fatalf("%+v", m)
	}
	m, err = RenderLinkEmail(LinkEmail{To: "a@b.test", AppName: "Acme", Bundle: bundle, ExpiryMinutes: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, bundle) || !strings.Contains(m.HTML, "3DZhYvBjNL4Q2nwVyUK8ux7SbEd9aZrZ&#43;x") ||
		strings.Contains(m.HTML, "href=") {
		t.Fatalf("%+v", m)
	}
	for _, bad := range []LinkEmail{
		{To: "a@b.test", AppName: "Acme", Bundle: bundle, MagicLinkTemplate: "javascript:alert(%s)"},
		{To: "a@b.test", AppName: "Acme", Bundle: bundle, MagicLinkTemplate: "https://dapp.test/"},
		{To: "a@b.test", AppName: "Acme", Bundle: bundle, MagicLinkTemplate: "https://dapp.test/%s/%s"},
		{To: "a@b.test", AppName: "Acme"},
		{To: "a@b.test", Bundle: bundle},
	} {
		if _, err := RenderLinkEmail(bad); !errors.Is(err, ErrInvalidMessage) {
			t.Errorf("%+v: err = %v", bad, err)
		}
	}
}
