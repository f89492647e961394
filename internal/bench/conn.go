package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"
)

// requestTimeout bounds one request of the measured window, as the setup client's Timeout does.
const requestTimeout = 30 * time.Second

// conn is one worker's keep-alive HTTP/1.1 connection for the measured window. Each request is
// written whole in one write (request line, headers and body, built in a buffer the worker
// reuses) and its response read in full. It spares the load generator net/http.Transport's
// per-request machinery (a writer and a reader goroutine per connection and the channel handoffs
// between them, a timer goroutine for the client timeout, the header maps built for every
// request and response), which took about a quarter of the CPU of a whoami run; the server sees
// the same HTTP/1.1 requests over the same kind of TCP connections.
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
	status, closing, err := c.readResponse()
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", status, truncate(c.body, 300))
	}
	if closing {
		c.Close()
	}
	return nil
}

// readResponse reads one response: its status, whether the server closes the connection after
// it, and its whole body, into c.body (by Content-Length, chunks, or up to the connection's end).
// Only the three headers that frame the body are looked at: building net/http's header map of
// each response was most of what remained of the client's own CPU.
func (c *conn) readResponse() (status int, closing bool, err error) {
	line, err := c.line()
	if err != nil {
		return 0, false, err
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, fmt.Errorf("malformed HTTP status line %q", truncate(line, 100))
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, false, fmt.Errorf("malformed HTTP status line %q", truncate(line, 100))
	}
	closing = line[7] == '0' // HTTP/1.0
	length, chunked := int64(-1), false
	for {
		if line, err = c.line(); err != nil {
			return 0, false, err
		}
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, false, fmt.Errorf("malformed HTTP header line %q", truncate(line, 100))
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
				return 0, false, fmt.Errorf("malformed Content-Length %q", truncate(value, 100))
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	body := c.body[:0]
	switch {
	case status/100 == 1 || status == http.StatusNoContent || status == http.StatusNotModified:
	case chunked:
		if body, err = readAll(httputil.NewChunkedReader(c.br), body); err != nil {
			return 0, false, err
		}
		for { // the trailer, up to its empty line
			if line, err = c.line(); err != nil {
				return 0, false, err
			}
			if len(line) == 0 {
				break
			}
		}
	case length >= 0:
		if int64(cap(body)) < length {
			body = make([]byte, 0, length)
		}
		body = body[:length]
		if _, err = io.ReadFull(c.br, body); err != nil {
			return 0, false, err
		}
	default: // the body ends with the connection
		body, err = readAll(c.br, body)
		closing = true
	}
	c.body = body
	return status, closing, err
}

// line reads a line of the response head, without its line ending.
func (c *conn) line() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
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
