package dashboard_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/dashboard"
)

// 200 concurrent wrong passwords for one e-mail: a probe saw all 200 checked (3.7 GB of
// argon2id memory). The attempt is now reserved before the hash and the checks running at once
// are bounded: at most the e-mail's 5 failures are ever hashed, the rest answered 429 at once,
// and the right password is then refused too until the window passes.
func TestConcurrentWrongPasswordsAreBounded(t *testing.T) {
	e := setup(t)
	var wg sync.WaitGroup
	codes := make(chan int, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.PostForm(
				e.dash.URL+"/login",
				url.Values{"email": {"ops@example.com"}, "password": {"wrong password!"}},
			)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	if n := e.s.Dashboard.PasswordChecks(); n > dashboard.DefaultMaxFailuresPerEmail {
		t.Fatalf(
			"%d password checks ran for one e-mail (limit %d); answers %v",
			n,
			dashboard.DefaultMaxFailuresPerEmail,
			count,
		)
	}
	if count[http.StatusUnauthorized]+count[http.StatusTooManyRequests] != 200 {
		t.Fatalf("answers %v", count)
	}
	// Fill the e-mail's failures one at a time; then even the right password waits.
	for i := 0; i < dashboard.DefaultMaxFailuresPerEmail; i++ {
		e.browser().post("/login", url.Values{"email": {"ops@example.com"}, "password": {"wrong password!"}})
	}
	if r := e.browser().login(password); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("locked e-mail, right password: %d", r.StatusCode)
	}
	e.now = e.now.Add(16 * time.Minute)
	if r := e.browser().login(password); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the window: %d", r.StatusCode)
	}
	signedIn := e.browser()
	signedIn.login(password)
	if _, body := signedIn.get("/audit"); !strings.Contains(body, "sign-in locked out") ||
		!strings.Contains(body, "sign-in failed") {
		t.Fatal("failed sign-ins and lockouts are not in the audit log")
	}
}

// With the process's password checks all busy, a sign-in is answered 429 at once, without
// hashing.
func TestPasswordChecksBusyAnswer429(t *testing.T) {
	e := setup(t)
	hold, held := make(chan struct{}), make(chan struct{}, 4)
	dashboard.SetBeforeCheck(e.s.Dashboard, func() { held <- struct{}{}; <-hold })
	var wg sync.WaitGroup
	for i := 0; i < dashboard.DefaultMaxChecks; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); e.browser().login("wrong password!") }()
	}
	for i := 0; i < dashboard.DefaultMaxChecks; i++ {
		<-held
	}
	before := e.s.Dashboard.PasswordChecks()
	r := e.browser().login(password)
	if r.StatusCode != http.StatusTooManyRequests || e.s.Dashboard.PasswordChecks() != before {
		t.Fatalf("with every check busy: %d, checks %d → %d", r.StatusCode, before, e.s.Dashboard.PasswordChecks())
	}
	close(hold)
	wg.Wait()
	dashboard.SetBeforeCheck(e.s.Dashboard, nil)
	if r := e.browser().login(password); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the checks finished: %d", r.StatusCode)
	}
}

// Two dashboard processes over one store (two Servers here; the PostgreSQL two-process test is
// internal/server's TestDashboardSessionsAcrossProcesses): a session made by one is honoured by
// the other, signing out at one ends it at both, and failures count across both.
func TestDashboardSessionsShared(t *testing.T) {
	e := setup(t)
	other := &dashboard.Server{
		Store:   e.s.Store,
		Proxy:   e.s.Proxy,
		Version: "test",
		Now:     func() time.Time { return e.now },
	}
	two := httptest.NewServer(other.Handler())
	defer two.Close()
	b := e.browser()
	if r := b.login(password); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", r.StatusCode)
	}
	u, _ := url.Parse(e.dash.URL)
	cookies := b.c.Jar.Cookies(u)
	at := func(base string) int {
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if at(e.dash.URL) != http.StatusOK || at(two.URL) != http.StatusOK {
		t.Fatal("the session is not honoured by both processes")
	}
	// Sign out through the second.
	jar, _ := cookiejar.New(nil)
	u2, _ := url.Parse(two.URL)
	jar.SetCookies(u2, cookies)
	b2 := &browser{
		t: t,
		u: two.URL,
		c: &http.Client{
			Jar:           jar,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	_, page := b2.get("/")
	m := csrfField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token")
	}
	b2.post("/logout", url.Values{"csrf": {m[1]}})
	if at(e.dash.URL) != http.StatusSeeOther {
		t.Fatal("signed out at one process, the session lives on at the other")
	}
	// Failures count across processes.
	for i := 0; i < dashboard.DefaultMaxFailuresPerEmail; i++ {
		base := []string{e.dash.URL, two.URL}[i%2]
		resp, _ := http.PostForm(
			base+"/login",
			url.Values{"email": {"ops@example.com"}, "password": {"wrong password!"}},
		)
		resp.Body.Close()
	}
	if r := b.login(password); r.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("failures at two processes were not counted together: %d", r.StatusCode)
	}
}
