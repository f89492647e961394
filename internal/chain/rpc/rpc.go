package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/latchkey/latchkey/internal/outbound"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// ErrUnavailable wraps every failure to reach the node (after the retries).
var ErrUnavailable = errors.New("rpc: provider unavailable")

// Error is a JSON-RPC error the node answered with.
type Error struct {
	Network string
	Code    int
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s node: %s (code %d)", e.Network, e.Message, e.Code)
}

// Client calls one node.
type Client struct {
	Network string // CAIP-2 id, for errors
	URL     string
	HTTP    *http.Client
	// Retries after the first attempt (default 2); Backoff is the first wait (default 200 ms),
	// doubled each time.
	Retries int
	Backoff time.Duration
	// Calls counts the HTTP requests made (for measurements and tests).
	Calls atomic.Int64
	// OnError, when set, is told of every call that fails (metrics).
	OnError func(network string)
	id      atomic.Int64
}

const maxResponse = 8 << 20

// Call runs method with params and decodes the result into out.
func (c *Client) Call(ctx context.Context, method string, params []any, out any) error {
	err := c.call(ctx, method, params, out)
	if err != nil && c.OnError != nil && !errors.Is(err, outbound.ErrInTransaction) {
		c.OnError(c.Network)
	}
	return err
}

func (c *Client) call(ctx context.Context, method string, params []any, out any) error {
	if err := outbound.Check(ctx, "chain RPC "+method); err != nil {
		return err
	}
	if params == nil {
		params = []any{}
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id.Add(1), "method": method, "params": params})
	if err != nil {
		return err
	}
	retries, wait := c.Retries, c.Backoff
	if retries <= 0 {
		retries = 2
	}
	if wait <= 0 {
		wait = 200 * time.Millisecond
	}
	var last error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %s %s: %v", ErrUnavailable, c.Network, method, ctx.Err())
			case <-time.After(wait):
			}
			wait *= 2
		}
		var retry bool
		retry, last = c.once(ctx, method, body, out)
		if last == nil || !retry {
			return last
		}
	}
	return last
}

func (c *Client) once(ctx context.Context, method string, body []byte, out any) (retry bool, err error) {
	client := c.HTTP
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("%w: %s: bad provider URL", ErrUnavailable, c.Network)
	}
	req.Header.Set("Content-Type", "application/json")
	c.Calls.Add(1)
	resp, err := client.Do(req)
	if err != nil {
		// The error of Do names the URL; say only what happened.
		var ue interface{ Timeout() bool }
		what := "connection failed"
		if errors.As(err, &ue) && ue.Timeout() {
			what = "timed out"
		}
		return true, fmt.Errorf("%w: %s %s: %s", ErrUnavailable, c.Network, method, what)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return true, fmt.Errorf("%w: %s %s: reading the answer failed", ErrUnavailable, c.Network, method)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return true, fmt.Errorf("%w: %s %s: HTTP %d", ErrUnavailable, c.Network, method, resp.StatusCode)
	}
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return false, fmt.Errorf(
			"%w: %s %s: HTTP %d, not a JSON-RPC answer",
			ErrUnavailable,
			c.Network,
			method,
			resp.StatusCode,
		)
	}
	if env.Error != nil {
		msg := env.Error.Message
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return false, &Error{Network: c.Network, Code: env.Error.Code, Message: msg}
	}
	if out != nil {
		if err := json.Unmarshal(env.Result, out); err != nil {
			return false, fmt.Errorf("%w: %s %s: unexpected result: %v", ErrUnavailable, c.Network, method, err)
		}
	}
	return false, nil
}
