package notify

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

func TestTwilioSends(t *testing.T) {
	var got struct {
		path, ctype, user, pass string
		form                    url.Values
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.path = r.URL.Path
		got.ctype = r.Header.Get("Content-Type")
		got.user, got.pass, _ = r.BasicAuth()
		b, _ := io.ReadAll(r.Body)
		got.form, _ = url.ParseQuery(string(b))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"sid":"SM123","status":"queued"}`)
	}))
	defer srv.Close()
	tw := &Twilio{BaseURL: srv.URL + "/", AccountSID: "AC123", AuthToken: "tok-secret", From: "+15550001111"}
	sms := RenderOTPSMS("Acme", "123456")
	sms.To = "+15552223333"
	if err := tw.SendSMS(context.Background(), sms); err != nil {
		t.Fatal(err)
	}
	if got.path != "/2010-04-01/Accounts/AC123/Messages.json" {
		t.Errorf("path %q", got.path)
	}
	if got.ctype != "application/x-www-form-urlencoded" {
		t.Errorf("content type %q", got.ctype)
	}
	if got.user != "AC123" || got.pass != "tok-secret" {
		t.Errorf("basic auth %q:%q", got.user, got.pass)
	}
	if got.form.Get("To") != "+15552223333" || got.form.Get("From") != "+15550001111" ||
		got.form.Get("Body") != "123456 is your Acme verification code. Do not share it with anyone." {
		t.Errorf("form %v", got.form)
	}
}

func TestTwilioErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr []string
	}{
		{
			"invalid number",
			400,
			`{"code":21211,"message":"The 'To' number +1555 is not a valid phone number.","more_info":"https://www.twilio.com/docs/errors/21211","status":400}`,
			[]string{"HTTP 400", "The 'To' number +1555 is not a valid phone number.", "code 21211"},
		},
		{
			"bad credentials",
			401,
			`{"code":20003,"message":"Authenticate","status":401}`,
			[]string{"HTTP 401", "Authenticate"},
		},
		{"not JSON", 502, `<html>bad gateway</html>`, []string{"HTTP 502"}},
		{
			"echoes secrets",
			400,
			`{"code":1,"message":"token tok-secret body 123456 is your Acme verification code. Do not share it with anyone."}`,
			[]string{"HTTP 400", "[redacted]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			tw := &Twilio{BaseURL: srv.URL, AccountSID: "AC1", AuthToken: "tok-secret", From: "+1"}
			sms := RenderOTPSMS("Acme", "123456")
			sms.To = "+1555"
			err := tw.SendSMS(context.Background(), sms)
			if !errors.Is(err, ErrDelivery) {
				t.Fatalf("err = %v, want ErrDelivery", err)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q lacks %q", err, w)
				}
			}
			for _, secret := range []string{"tok-secret", "123456"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("err leaks %q: %v", secret, err)
				}
			}
		})
	}
}

func TestTwilioConfigAndUnreachable(t *testing.T) {
	ctx := context.Background()
	if err := (&Twilio{From: "+1"}).SendSMS(ctx, SMS{To: "+2", Body: "x"}); err == nil {
		t.Error("missing SID and token accepted")
	}
	if err := (&Twilio{AccountSID: "AC/../x", AuthToken: "t", From: "+1"}).SendSMS(ctx, SMS{To: "+2", Body: "x"}); err == nil {
		t.Error("SID with a slash accepted")
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	err := (&Twilio{BaseURL: base, AccountSID: "AC1", AuthToken: "tok-secret", From: "+1"}).SendSMS(
		ctx,
		SMS{To: "+2", Body: "code 424242"},
	)
	if !errors.Is(err, ErrDelivery) || strings.Contains(err.Error(), "tok-secret") ||
		strings.Contains(err.Error(), "424242") {
		t.Fatalf("err = %v", err)
	}
}
