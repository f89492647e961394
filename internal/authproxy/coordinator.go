package authproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Coordinator is where the proxy sends the activities and queries it has stamped: the activity
// API of this process, or of another Latchkey (--coordinator-url). Either way the request is
// exactly what a client sends, and the answer comes back as the API gave it.
type Coordinator interface {
	// Do posts body to /public/v1/<kind>/<op> (kind is "submit" or "query") with the stamp
	// header and returns the answer's HTTP status and body. err is a transport failure only;
	// an API error is a status and body like any other.
	Do(
		ctx context.Context,
		kind, op string,
		body []byte,
		stampHeader, stampValue string,
	) (status int, resp []byte, err error)
}

// maxAnswer bounds an answer read from the coordinator.
const maxAnswer = 8 << 20

// InProcess calls the activity API handler of this process directly (no network): the same
// stamp verification, caller resolution and activity engine (activity.Engine.Submit and
// Query) a client's request goes through.
type InProcess struct {
	API http.Handler
}

// Do implements Coordinator.
func (c InProcess) Do(
	ctx context.Context,
	kind, op string,
	body []byte,
	stampHeader, stampValue string,
) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/public/v1/"+kind+"/"+op, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(stampHeader, stampValue)
	// The proxy runs in this process: it is a loopback client for IP allowlists.
	req.RemoteAddr = "127.0.0.1:0"
	w := &answer{header: http.Header{}}
	c.API.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.status, w.body.Bytes(), nil
}

// answer is an in-memory http.ResponseWriter.
type answer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }
func (a *answer) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
}
func (a *answer) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	if a.body.Len()+len(b) > maxAnswer {
		return 0, fmt.Errorf("authproxy: answer larger than %d bytes", maxAnswer)
	}
	return a.body.Write(b)
}

// Remote calls the activity API of another Latchkey over HTTP.
type Remote struct {
	// BaseURL is the API's base URL (scheme://host[:port], optionally with a path prefix).
	BaseURL string
	Client  *http.Client
}

// NewRemote returns a Remote coordinator for baseURL with a bounded client.
func NewRemote(baseURL string) *Remote {
	return &Remote{BaseURL: strings.TrimSuffix(baseURL, "/"), Client: &http.Client{Timeout: 30 * time.Second}}
}

// Do implements Coordinator.
func (c *Remote) Do(
	ctx context.Context,
	kind, op string,
	body []byte,
	stampHeader, stampValue string,
) (int, []byte, error) {
	req, err := http.NewRequestWithContext(
		ctx,
		http.MethodPost,
		c.BaseURL+"/public/v1/"+kind+"/"+op,
		bytes.NewReader(body),
	)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(stampHeader, stampValue)
	resp, err := c.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return 0, nil, err
	}
	if len(b) > maxAnswer {
		return 0, nil, fmt.Errorf("authproxy: answer larger than %d bytes", maxAnswer)
	}
	return resp.StatusCode, b, nil
}
