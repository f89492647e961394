package authproxy

import (
	"slices"
	"strings"
	"testing"
)

func TestSettingsNormalize(t *testing.T) {
	ok := DefaultSettings()
	ok.AllowedOrigins = []string{"https://app.example/", "http://127.0.0.1:3000", "https://app.example"}
	ok.EnabledProviders = []string{"Google", "email", "email"}
	ok.OAuthClientIDs = map[string]string{"Google": " cid "}
	n, err := ok.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.AllowedOrigins, []string{"https://app.example", "http://127.0.0.1:3000"}) ||
		!slices.Equal(n.EnabledProviders, []string{"email", "google"}) || n.OAuthClientIDs["google"] != "cid" {
		t.Fatalf("normalized: %+v", n)
	}
	if !n.AllowsOrigin("https://app.example") || n.AllowsOrigin("https://evil.example") ||
		n.AllowsOrigin("https://x.app.example") {
		t.Fatal("origin check")
	}
	if d, _ := DefaultSettings().Normalize(); !d.AllowsOrigin("https://anything.example") {
		t.Fatal("default allows all origins")
	}

	bad := []struct {
		field string
		edit  func(*Settings)
	}{
		{"allowedOrigins", func(s *Settings) { s.AllowedOrigins = []string{"https://*.example"} }},
		{"allowedOrigins", func(s *Settings) { s.AllowedOrigins = []string{"*", "https://a.example"} }},
		{"allowedOrigins", func(s *Settings) { s.AllowedOrigins = []string{"https://a.example/path"} }},
		{"allowedOrigins", func(s *Settings) { s.AllowedOrigins = []string{"ftp://a.example"} }},
		{"sessionExpirationSeconds", func(s *Settings) { s.SessionExpirationSeconds = 10 }},
		{"otpLength", func(s *Settings) { s.OTPLength = 4 }},
		{"enabledProviders", func(s *Settings) { s.EnabledProviders = []string{"myspace"} }},
		{"oauthClientIds", func(s *Settings) { s.OAuthClientIDs = map[string]string{"email": "x"} }},
		{"oauthRedirectUrl", func(s *Settings) { s.OAuthRedirectURL = "not a url" }},
		{"email.appName", func(s *Settings) { s.Email.AppName = "a\r\nBcc: x" }},
	}
	for _, c := range bad {
		s := DefaultSettings()
		c.edit(&s)
		if _, err := s.Normalize(); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: got %v", c.field, err)
		}
	}
}
