package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// requestTimeout bounds one request of the measured window, as the setup client's Timeout does.
const requestTimeout = 30 * time.Second

// conn is one worker's keep-alive HTTP/1.1 connection for the measured window. Each request is
// written whole in one write (request line, headers and body, built in a buffer the worker
// reuses) and its response read in full with net/http's parser. It spares the load generator
// net/http.Transport's per-request machinery (a writer and a reader goroutine per connection and
// the channel handoffs between them, a timer goroutine for the client timeout, the header map
// built for every request), which took about a quarter of the CPU of a whoami run; the server
// sees the same HTTP/1.1 requests over the same kind of TCP connections.
type conn struct {
	ctx    context.Context
	target *url.URL
	tls    *tls.Config
	c      net.Conn
	br     *bufio.Reader
	stop   func() bool // undoes the context.AfterFunc that interrupts c when ctx ends
	wbuf   []byte
	body   []byte
}

// newConn returns a connection to base (http or https), dialled on first use.
func newConn(ctx context.Context, base string) (*conn, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	c := &conn{ctx: ctx, target: u}
	switch u.Scheme {
	case "http":
	case "https":
		c.tls = &tls.Config{ServerName: u.Hostname(), NextProtos: []string{"http/1.1"}}
	default:
		return nil, fmt.Errorf("--api-url must be http or https, got %q", base)
	}
	return c, nil
}

func (c *conn) dial() error {
	host := c.target.Host
	if c.target.Port() == "" {
		port := "80"
		if c.tls != nil {
			port = "443"
		}
		host = net.JoinHostPort(c.target.Hostname(), port)
	}
	var d net.Dialer
	nc, err := d.DialContext(c.ctx, "tcp", host)
	if err != nil {
		return err
	}
	if c.tls != nil {
		tc := tls.Client(nc, c.tls)
		if err := tc.HandshakeContext(c.ctx); err != nil {
			nc.Close()
			return err
		}
		nc = tc
	}
	c.c = nc
	if c.br == nil {
		c.br = bufio.NewReaderSize(nc, 16<<10)
	} else {
		c.br.Reset(nc)
	}
	// The end of the window (or an interrupt) cuts off the request in flight, as cancelling a
	// net/http request does.
	c.stop = context.AfterFunc(c.ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	return nil
}

// Close closes the connection, if it is open.
func (c *conn) Close() {
	if c.c != nil {
		c.stop()
		_ = c.c.Close()
		c.c = nil
	}
}

// send posts r and reads the whole response; a status other than 200 is an error. Any failure
// closes the connection (the next request dials a new one).
func (c *conn) send(r stamped) error {
	if c.c == nil {
		if err := c.dial(); err != nil {
			return err
		}
	}
	err := c.roundTrip(r)
	if err != nil {
		c.Close()
	}
	return err
}

func (c *conn) roundTrip(r stamped) error {
	if err := c.c.SetDeadline(time.Now().Add(requestTimeout)); err != nil {
		return err
	}
	if c.ctx.Err() != nil {
		return c.ctx.Err()
	}
	b := c.wbuf[:0]
	b = append(b, "POST "...)
	b = append(b, c.target.EscapedPath()...)
	b = append(b, r.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.target.Host...)
	b = append(b, "\r\nUser-Agent: latchkey-bench\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(r.body)), 10)
	b = append(b, "\r\n"...)
	b = append(b, r.header...)
	b = append(b, ": "...)
	b = append(b, r.value...)
	b = append(b, "\r\n\r\n"...)
	b = append(b, r.body...)
	c.wbuf = b
	if _, err := c.c.Write(b); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return err
	}
	c.body, err = readAll(resp.Body, c.body[:0])
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, truncate(c.body, 300))
	}
	if resp.Close {
		c.Close()
	}
	return nil
}

// readAll is io.ReadAll into b's storage.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
