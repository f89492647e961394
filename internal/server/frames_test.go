package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

var signerMetaRE = regexp.MustCompile(`<meta name="latchkey-signer-keys" content="([^"]*)">`)

// framePage fetches a frame page and returns the signer keys it trusts and its CSP's
// frame-ancestors.
func framePage(t *testing.T, base, target string) (keys []string, ancestors string) {
	t.Helper()
	resp, err := http.Get(base + target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, resp.StatusCode, b)
	}
	m := signerMetaRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("GET %s: no signer keys in the page", target)
	}
	_, fa, _ := strings.Cut(resp.Header.Get("Content-Security-Policy"), "frame-ancestors ")
	return strings.Fields(string(m[1])), fa
}

// The frames trust the signer keys of the deployment as they are now: the current key, the next
// one during a rotation's overlap, the replaced one during its grace period.
func TestFramesTrustTheSignerKeysThroughARotation(t *testing.T) {
	h := servertest.New(t)
	h.Server.Keys.Now = h.Now
	ctx := context.Background()
	frames := httptest.NewServer(h.Server.Frames)
	defer frames.Close()
	cur := h.Server.PublicKeys().SignerPublicKey
	if keys, _ := framePage(t, frames.URL, "/export"); strings.Join(keys, " ") != cur {
		t.Fatalf("before a rotation: %v, want %s", keys, cur)
	}
	r, err := custody.RotateServerKey(ctx, h.Server.Store, h.Server.Keyring, custody.Signer, 10*time.Minute,
		30*time.Minute, h.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Server.Keys.Reload(ctx, h.Server.Store, h.Server.Keyring); err != nil {
		t.Fatal(err)
	}
	if keys, _ := framePage(t, frames.URL, "/import"); strings.Join(keys, " ") != cur+" "+r.Next {
		t.Fatalf("during the overlap: %v", keys)
	}
	h.Advance(11 * time.Minute)
	if keys, _ := framePage(t, frames.URL, "/export"); strings.Join(keys, " ") != r.Next+" "+cur {
		t.Fatalf("during the grace period: %v", keys)
	}
	h.Advance(30 * time.Minute)
	if keys, _ := framePage(t, frames.URL, "/export"); strings.Join(keys, " ") != r.Next {
		t.Fatalf("after the grace period: %v", keys)
	}
}

// ?organizationId= adds the allowed origins of that organization's auth proxy to frame-ancestors
// while the proxy is enabled; --frames-ancestors always applies; nothing is 'none'.
func TestFramesAncestorsFromTheAuthProxy(t *testing.T) {
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.FramesAncestors = []string{"https://always.example"}
	}))
	ctx := context.Background()
	_, created := h.RootOrg("Acme")
	org := created.OrganizationID
	frames := httptest.NewServer(h.Server.Frames)
	defer frames.Close()
	if _, fa := framePage(t, frames.URL, "/export?organizationId="+org); fa != "https://always.example" {
		t.Fatalf("without a proxy: %q", fa)
	}
	s := authproxy.DefaultSettings()
	s.AllowedOrigins = []string{"https://shop.example", "http://localhost:3000"}
	if _, err := h.Server.Proxy.Enable(ctx, org, s); err != nil {
		t.Fatal(err)
	}
	if _, fa := framePage(t, frames.URL, "/export?organizationId="+org); fa !=
		"https://always.example https://shop.example http://localhost:3000" {
		t.Fatalf("with the proxy: %q", fa)
	}
	if _, fa := framePage(t, frames.URL, "/auth"); fa != "https://always.example" {
		t.Fatalf("without organizationId: %q", fa)
	}
	if _, err := h.Server.Proxy.Disable(ctx, org); err != nil {
		t.Fatal(err)
	}
	if _, fa := framePage(t, frames.URL, "/import?organizationId="+org); fa != "https://always.example" {
		t.Fatalf("with the proxy disabled: %q", fa)
	}
}
