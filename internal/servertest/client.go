package servertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// Client is an API key of an organization: it stamps each request body as a Turnkey SDK does.
type Client struct {
	H       *Harness
	Org     string
	Priv    string
	Pub     string
	Stamper stamp.Stamper
}

// NewKey generates a P-256 API key pair, hex encoded.
func (h *Harness) NewKey() (priv, pub string) {
	h.T.Helper()
	priv, pub, err := stamp.GenerateKey(stamp.CurveP256)
	if err != nil {
		h.T.Fatal(err)
	}
	return priv, pub
}

// Client is the P-256 key priv calling as organization org.
func (h *Harness) Client(org, priv string) *Client {
	h.T.Helper()
	st, err := stamp.NewP256Stamper(priv)
	if err != nil {
		h.T.Fatal(err)
	}
	pub, _ := stamp.PublicKeyHex(stamp.CurveP256, priv)
	return &Client{H: h, Org: org, Priv: priv, Pub: pub, Stamper: st}
}

// RootOrg creates a top-level organization whose root user "root" holds one new API key, and
// returns that key's client with what was created.
func (h *Harness) RootOrg(name string) (*Client, server.Created) {
	h.T.Helper()
	priv, pub := h.NewKey()
	c, err := h.Server.CreateOrganization(
		context.Background(),
		server.OrgSpec{OrgName: name, UserName: "root", APIPublicKey: pub},
	)
	if err != nil {
		h.T.Fatal(err)
	}
	return h.Client(c.OrganizationID, priv), c
}

// EndUser creates a sub-organization of root's organization whose one root user, name, has the
// e-mail address and a new API key; it returns the sub-organization, the user and the key's
// private half. The clock moves a millisecond first so that repeated calls never collide.
func (h *Harness) EndUser(root *Client, name, email string) (subID, userID, priv string) {
	h.T.Helper()
	priv, pub := h.NewKey()
	h.Advance(time.Millisecond)
	r := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": name + "'s", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": name, "userEmail": email, "apiKeys": []any{
			map[string]any{
				"apiKeyName": "k",
				"publicKey":  pub,
				"curveType":  "API_KEY_CURVE_P256",
			}}, "authenticators": []any{}, "oauthProviders": []any{}}},
	})
	if r.Status != http.StatusOK {
		h.T.Fatalf("create_sub_organization: %s", r.Raw)
	}
	return r.Result(
			"createSubOrganizationResultV8",
			"subOrganizationId",
		), r.Result(
			"createSubOrganizationResultV8",
			"rootUserIds",
			"0",
		), priv
}

// NewUser creates a user of root's organization, not a root user, with the e-mail address and a
// new API key; it returns the user and the key's client.
func (h *Harness) NewUser(root *Client, name, email string) (userID string, c *Client) {
	h.T.Helper()
	priv, pub := h.NewKey()
	h.Advance(time.Millisecond)
	r := root.MustSubmit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{
		"userName": name, "userEmail": email, "apiKeys": []any{map[string]any{"apiKeyName": name, "publicKey": pub, "curveType": "API_KEY_CURVE_P256"}},
		"authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	return r.Result("createUsersResult", "userIds", "0"), h.Client(root.Org, priv)
}

// Post sends body to the API's path with the given headers, unstamped unless they stamp it.
func (h *Harness) Post(path string, body []byte, headers map[string]string) Response {
	h.T.Helper()
	req, err := http.NewRequest(http.MethodPost, h.URL+path, bytes.NewReader(body))
	if err != nil {
		h.T.Fatalf("request to %q: %v", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.T.Fatal(err)
	}
	defer resp.Body.Close()
	return Read(resp)
}

// Read decodes an HTTP response into a Response (Body stays nil when it is not JSON).
func Read(resp *http.Response) Response {
	raw, _ := io.ReadAll(resp.Body)
	r := Response{Status: resp.StatusCode, Raw: raw}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// Post stamps body with the client's key and sends it to path.
func (c *Client) Post(path string, body []byte) Response {
	c.H.T.Helper()
	name, value, err := c.Stamper.Stamp(body)
	if err != nil {
		c.H.T.Fatal(err)
	}
	return c.H.Post(path, body, map[string]string{name: value})
}

// SubmitBody is the request body of an activity of type typ in the client's organization,
// timestamped by the harness clock.
func (c *Client) SubmitBody(typ string, params any) []byte {
	p, _ := json.Marshal(params)
	return fmt.Appendf(
		nil,
		`{"parameters":%s,"organizationId":%q,"timestampMs":"%d","type":%q}`,
		p,
		c.Org,
		c.H.Now().UnixMilli(),
		typ,
	)
}

// Submit posts the activity typ with params to /public/v1/submit/<op>.
func (c *Client) Submit(op, typ string, params any) Response {
	c.H.T.Helper()
	return c.Post("/public/v1/submit/"+op, c.SubmitBody(typ, params))
}

// MustSubmit is Submit, failing the test unless the activity completed.
func (c *Client) MustSubmit(op, typ string, params any) Response {
	c.H.T.Helper()
	r := c.Submit(op, typ, params)
	MustOK(c.H.T, r)
	return r
}

// SubmitTwice posts the same activity bytes twice and fails the test unless both complete as
// one activity with one result, as a retried request must; it returns the answer.
func (c *Client) SubmitTwice(op, typ string, params any) Response {
	c.H.T.Helper()
	body := c.SubmitBody(typ, params)
	first := c.Post("/public/v1/submit/"+op, body)
	MustOK(c.H.T, first)
	again := c.Post("/public/v1/submit/"+op, body)
	MustOK(c.H.T, again)
	if first.Str("activity", "id") != again.Str("activity", "id") ||
		first.Str("activity", "result") != again.Str("activity", "result") {
		c.H.T.Fatalf("the same bytes twice made two activities:\n%s\n%s", first.Raw, again.Raw)
	}
	return first
}

// Query posts params, with the client's organizationId added, to /public/v1/query/<op>.
func (c *Client) Query(op string, params map[string]any) Response {
	c.H.T.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["organizationId"] = c.Org
	b, _ := json.Marshal(params)
	return c.Post("/public/v1/query/"+op, b)
}

// MustQuery is Query, failing the test unless it answered 200.
func (c *Client) MustQuery(op string, params map[string]any) Response {
	c.H.T.Helper()
	r := c.Query(op, params)
	MustOK(c.H.T, r)
	return r
}

// Response is an API answer: its status, its JSON body decoded and its bytes.
type Response struct {
	Status int
	Body   map[string]any
	Raw    []byte
}

// at walks the body by member names and array indexes.
func (r Response) at(path ...string) any {
	var v any = r.Body
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// Str is the value at path (member names, array indexes): a string as is, anything else as
// JSON, "" when absent.
func (r Response) Str(path ...string) string {
	v := r.at(path...)
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Len is the length of the array at path (0 when absent or not an array).
func (r Response) Len(path ...string) int {
	a, _ := r.at(path...).([]any)
	return len(a)
}

// Result is the value at path inside the activity's result member (createUsersResult, …).
func (r Response) Result(member string, path ...string) string {
	return r.Str(append([]string{"activity", "result", member}, path...)...)
}

// Decode decodes the value at path into v, failing the test when it does not fit.
func (r Response) Decode(t testing.TB, v any, path ...string) {
	t.Helper()
	b, err := json.Marshal(r.at(path...))
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		t.Fatalf("decode %s: %v: %s", strings.Join(path, "."), err, r.Raw)
	}
}

// MustOK fails the test unless r is a 200 whose activity, if any, completed.
func MustOK(t testing.TB, r Response) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	if s := r.Str("activity", "status"); s != "" && s != "ACTIVITY_STATUS_COMPLETED" {
		t.Fatalf("activity status %s: %s", s, r.Raw)
	}
}

// WantError fails the test unless r is a Turnkey error with the HTTP status, the gRPC code and
// a message containing substr.
func WantError(t testing.TB, r Response, status int, code int, substr string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if got, _ := r.Body["code"].(float64); int(got) != code {
		t.Fatalf("code %v, want %d: %s", r.Body["code"], code, r.Raw)
	}
	if !strings.Contains(r.Str("message"), substr) {
		t.Fatalf("message %q does not contain %q", r.Str("message"), substr)
	}
	if d := r.Str("details", "0", "@type"); d != "type.googleapis.com/errors.v1.TurnkeyErrorDetail" {
		t.Fatalf("details[0].@type = %q: %s", d, r.Raw)
	}
}
