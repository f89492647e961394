package postgres

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/url"
	"sync"
	"testing"
)

// proxy is a TCP proxy between the store and PostgreSQL that fails the way a failover does, at
// chosen moments: it resets every connection (a primary killed), holds every byte of the
// connections open now without closing them (a primary stopped: its kernel still acknowledges),
// refuses new connections (no primary yet), or cuts a connection when the client sends a
// COMMIT, instead of passing it on or once the server has answered it (the answer is lost).
type proxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu       sync.Mutex
	conns    []*proxied
	refuse   bool
	onCommit string // "", "pass-then-cut", "cut" or "cut-and-refuse": the next COMMIT's fate (once)
	cuts     int
}

type proxied struct {
	client, server net.Conn
	frozen         chan struct{} // closed: hold everything
	muted          chan struct{} // closed: the server's next answer is dropped and both ends closed
	muteOnce       sync.Once
	done           chan struct{} // closed by close
	freezeOnce     sync.Once
	closeOnce      sync.Once
}

func (c *proxied) freeze() { c.freezeOnce.Do(func() { close(c.frozen) }) }

func (c *proxied) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.client.Close()
		_ = c.server.Close()
	})
}

// newProxy proxies to the host of rawURL and returns the URL through it.
func newProxy(t testing.TB, rawURL string) (*proxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: u.Host}
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.resetAll()
	})
	u.Host = ln.Addr().String()
	return p, u.String()
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		s, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		pc := &proxied{client: c, server: s, frozen: make(chan struct{}), done: make(chan struct{}),
			muted: make(chan struct{})}
		p.mu.Lock()
		p.conns = append(p.conns, pc)
		p.mu.Unlock()
		go p.pipe(pc, c, s, true)
		go p.pipe(pc, s, c, false)
	}
}

// commitBind is how a Bind message of pgx's cached COMMIT statement names it (after the empty
// portal's name): COMMIT is executed, not just prepared.
var commitBind = func() []byte {
	digest := sha256.Sum256([]byte("commit"))
	return []byte("\x00stmtcache_" + hex.EncodeToString(digest[:24]) + "\x00")
}()

// pipe copies from to to; from the client, it watches for COMMIT.
func (p *proxy) pipe(pc *proxied, from, to net.Conn, fromClient bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			select {
			case <-pc.frozen:
				<-pc.done // held until the test's cleanup closes the sockets
				return
			default:
			}
			if !fromClient {
				select {
				case <-pc.muted:
					pc.close() // the server answered the COMMIT: the answer is lost
					return
				default:
				}
			}
			if fromClient && bytes.Contains(buf[:n], commitBind) {
				p.mu.Lock()
				mode := p.onCommit
				p.onCommit = ""
				if mode != "" {
					p.cuts++
				}
				p.mu.Unlock()
				switch mode {
				case "pass-then-cut":
					pc.muteOnce.Do(func() { close(pc.muted) })
				case "cut":
					pc.close()
					return
				case "cut-and-refuse":
					p.setRefuse(true)
					pc.close()
					return
				}
			}
			if _, err := to.Write(buf[:n]); err != nil {
				pc.close()
				return
			}
		}
		if err != nil {
			pc.close()
			return
		}
	}
}

// resetAll closes every connection open now.
func (p *proxy) resetAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// freezeAll holds the bytes of every connection open now, both ways, without closing them.
func (p *proxy) freezeAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.freeze()
	}
	p.t.Cleanup(func() {
		for _, c := range conns {
			c.close()
		}
	})
}

// setTarget sends new connections to addr (another server behind the same address: a failover).
func (p *proxy) setTarget(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

func (p *proxy) setRefuse(v bool) {
	p.mu.Lock()
	p.refuse = v
	p.mu.Unlock()
}

func (p *proxy) cutAtCommit(mode string) {
	p.mu.Lock()
	p.onCommit = mode
	p.mu.Unlock()
}

func (p *proxy) cutCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}
