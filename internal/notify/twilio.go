package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/latchkey/latchkey/internal/outbound"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTwilioBaseURL is Twilio's production API.
const DefaultTwilioBaseURL = "https://api.twilio.com"

// Twilio sends SMS through Twilio's Messages API, or anything that speaks it
// (BaseURL points elsewhere for other providers and tests).
type Twilio struct {
	// BaseURL defaults to DefaultTwilioBaseURL.
	BaseURL    string
	AccountSID string
	AuthToken  string
	// From is the sending number (E.164) or messaging service sender.
	From string
	// HTTPClient defaults to a client with a 30 s timeout.
	HTTPClient *http.Client
}

var _ Texter = (*Twilio)(nil)

var defaultHTTPClient = &http.Client{Timeout: 30 * time.Second}

// SendSMS posts the message. Any non-2xx answer is an error naming the HTTP
// status and Twilio's error message; never the auth token or the body.
func (t *Twilio) SendSMS(ctx context.Context, s SMS) error {
	if err := outbound.Check(ctx, "SMS send"); err != nil {
		return err
	}
	if t.AccountSID == "" || t.AuthToken == "" || t.From == "" {
		return fmt.Errorf("notify: twilio needs an account SID, an auth token and a From number")
	}
	if strings.ContainsAny(t.AccountSID, "/?#%") {
		return fmt.Errorf("notify: twilio account SID has characters not allowed in a path")
	}
	if s.To == "" || s.Body == "" {
		return fmt.Errorf("%w: SMS needs a recipient and a body", ErrInvalidMessage)
	}
	base := t.BaseURL
	if base == "" {
		base = DefaultTwilioBaseURL
	}
	endpoint := strings.TrimRight(base, "/") + "/2010-04-01/Accounts/" + url.PathEscape(t.AccountSID) + "/Messages.json"
	form := url.Values{"To": {s.To}, "From": {t.From}, "Body": {s.Body}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("notify: twilio base URL is not usable: %v", redact(err.Error(), t.AuthToken))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(t.AccountSID, t.AuthToken)

	client := t.HTTPClient
	if client == nil {
		client = defaultHTTPClient
	}
	secrets := []string{t.AuthToken, s.Body}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: twilio request: %s", ErrDelivery, clip(redact(err.Error(), secrets...), 200))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	var te struct {
		Code    json.Number `json:"code"`
		Message string      `json:"message"`
	}
	msg := ""
	if json.Unmarshal(body, &te) == nil && te.Message != "" {
		msg = ": " + clip(redact(te.Message, secrets...), 300)
		if te.Code != "" {
			msg += " (code " + clip(te.Code.String(), 20) + ")"
		}
	}
	return fmt.Errorf("%w: twilio answered HTTP %d%s", ErrDelivery, resp.StatusCode, msg)
}
