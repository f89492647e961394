package otp_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/messages"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/ops/otp"
	"github.com/latchkey/latchkey/internal/session"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/wire"
)

// harness is an activity engine over SQLite in a temp dir serving the OTP operations, with real
// custody (keyring, server keys), an outbox for delivery that tests can make fail, a parent
// organization (root user) and a sub-organization with an end user, and a clock tests move.
type harness struct {
	t      *testing.T
	dir    string
	st     store.Store
	eng    *activity.Engine
	keys   *custody.ServerKeys
	outbox *notify.Outbox
	mail   *flaky
	// messages is the outbox the codes go through.
	messages *messages.Outbox

	parent, sub *directory.Organization
	root        *directory.Caller // root user of the parent, acting in the parent
	parentRoot  *directory.Caller // the same user, acting in the sub-organization
	member      *directory.Caller // a non-root user of the parent
	alice       *directory.User   // the sub-organization's end user

	mu  sync.Mutex
	now time.Time
}

// flaky delivers through the outbox unless told to fail.
type flaky struct {
	out  *notify.Outbox
	fail bool
}

func (f *flaky) SendEmail(ctx context.Context, m notify.Message) error {
	if f.fail {
		return fmt.Errorf("%w: smtp: 451 try later", notify.ErrDelivery)
	}
	return f.out.SendEmail(ctx, m)
}

func (f *flaky) SendSMS(ctx context.Context, s notify.SMS) error {
	if f.fail {
		return fmt.Errorf("%w: twilio: 500", notify.ErrDelivery)
	}
	return f.out.SendSMS(ctx, s)
}

const (
	aliceEmail = "alice@example.com"
	alicePhone = "+15551234567"
)

func newHarness(t *testing.T, sendLimit int) *harness {
	t.Helper()
	ctx := context.Background()
	h := &harness{t: t, dir: t.TempDir(), now: time.Now().UTC().Truncate(time.Millisecond)}
	st, err := sqlite.Open(ctx, filepath.Join(h.dir, "latchkey.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h.st = st
	mk, _ := custody.ParseMasterKey(bytes.Repeat([]byte{7}, 32))
	kr, err := custody.OpenKeyring(ctx, st, mk)
	if err != nil {
		t.Fatal(err)
	}
	if h.keys, err = custody.LoadServerKeys(ctx, st, kr); err != nil {
		t.Fatal(err)
	}
	if h.outbox, err = notify.NewOutbox(filepath.Join(h.dir, "outbox.jsonl")); err != nil {
		t.Fatal(err)
	}
	h.mail = &flaky{out: h.outbox}
	h.messages = &messages.Outbox{
		Store:   st,
		Keyring: kr,
		Emailer: h.mail,
		Texter:  h.mail,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	reg := activity.NewRegistry()
	otp.Register(reg, otp.Deps{
		Env: func(x *activity.Exec) directory.Env {
			return directory.Env{Now: x.Now, Limits: directory.DefaultLimits}
		},
		Messages: h.messages, SendLimit: sendLimit,
	})
	h.eng = activity.NewEngine(
		&activity.Services{Store: st, Keyring: kr, ServerKeys: h.keys, Custodian: custody.NewCustodian(kr, h.keys),
			Now: h.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		reg,
	)
	h.organizations()
	return h
}

func (h *harness) organizations() {
	ctx := context.Background()
	now := h.clock()
	env := directory.Env{Now: now, Limits: directory.DefaultLimits}
	p := &directory.Organization{
		ID:        id.New(),
		Name:      "Parent",
		Features:  []directory.Feature{},
		CreatedAt: now,
		UpdatedAt: now,
	}
	s := &directory.Organization{
		ID:        id.New(),
		Name:      "Alice's",
		ParentID:  p.ID,
		Features:  []directory.Feature{},
		CreatedAt: now,
		UpdatedAt: now,
	}
	var root, member *directory.User
	err := h.st.Update(ctx, func(tx store.Tx) error {
		var err error
		if root, err = directory.CreateUser(ctx, tx, env, p.ID, directory.UserSpec{Name: "root", Field: "user"}); err != nil {
			return err
		}
		if member, err = directory.CreateUser(ctx, tx, env, p.ID, directory.UserSpec{Name: "member", Field: "user"}); err != nil {
			return err
		}
		if h.alice, err = directory.CreateUser(ctx, tx, env, s.ID, directory.UserSpec{Name: "alice", Email: aliceEmail, PhoneNumber: alicePhone, Field: "user"}); err != nil {
			return err
		}
		p.RootQuorum = directory.Quorum{UserIDs: []string{root.ID}, Threshold: 1}
		s.RootQuorum = directory.Quorum{UserIDs: []string{h.alice.ID}, Threshold: 1}
		if err := directory.SaveOrganization(ctx, tx, p); err != nil {
			return err
		}
		return directory.SaveOrganization(ctx, tx, s)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.parent, h.sub = p, s
	caller := func(u *directory.User, target *directory.Organization) *directory.Caller {
		return &directory.Caller{
			User:           u,
			Org:            p,
			Target:         target,
			ParentAccess:   target != p,
			CredentialID:   id.New(),
			CredentialType: directory.CredentialAPIKeyP256,
			PublicKey: "02" + strings.Repeat(
				"ab",
				32,
			),
			Scheme:    "SIGNATURE_SCHEME_TK_API_P256",
			Signature: "3006020101020101",
		}
	}
	h.root, h.parentRoot, h.member = caller(root, p), caller(root, s), caller(member, p)
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

func (h *harness) tick() time.Time {
	h.advance(time.Millisecond)
	return h.clock()
}

// submit runs a submit request; it returns the result member's JSON and the activity JSON.
func (h *harness) submit(c *directory.Caller, path, typ string, params any) (json.RawMessage, []byte, error) {
	h.t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		h.t.Fatal(err)
	}
	raw := []byte(
		fmt.Sprintf(
			`{"parameters":%s,"organizationId":%q,"timestampMs":"%d","type":%q}`,
			p,
			c.Target.ID,
			h.tick().UnixMilli(),
			typ,
		),
	)
	env, err := activity.ParseEnvelope(raw)
	if err != nil {
		return nil, nil, err
	}
	data, err := h.eng.Submit(context.Background(), activity.SubmitRequest{Path: path, Raw: raw, Env: env, Caller: c})
	if err != nil {
		return nil, nil, err
	}
	var a struct {
		Status string                     `json:"status"`
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		h.t.Fatal(err)
	}
	if a.Status != activity.StatusCompleted || len(a.Result) != 1 {
		h.t.Fatalf("%s: activity %s", path, data)
	}
	for _, v := range a.Result {
		return v, data, nil
	}
	return nil, data, nil
}

func (h *harness) mustSubmit(c *directory.Caller, path, typ string, params, out any) []byte {
	h.t.Helper()
	res, data, err := h.submit(c, path, typ, params)
	if err != nil {
		h.t.Fatalf("%s: %v", path, err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			h.t.Fatalf("%s: decoding %s: %v", path, res, err)
		}
	}
	return data
}

func wantErr(t *testing.T, err error, status int, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("succeeded, want HTTP %d %q", status, substr)
	}
	e := apierr.From(err)
	if e.Code.HTTPStatus() != status || !strings.Contains(e.Message, substr) {
		t.Fatalf("got HTTP %d %q, want HTTP %d containing %q", e.Code.HTTPStatus(), e.Message, status, substr)
	}
}

var codeLine = regexp.MustCompile(`(?m)^    (\S+)\s*$`)

// lastCode reads the newest code from the outbox.
func (h *harness) lastCode() string {
	h.t.Helper()
	es, err := notify.ReadOutbox(h.outbox.Path())
	if err != nil || len(es) == 0 {
		h.t.Fatalf("outbox: %d entries, %v", len(es), err)
	}
	e := es[len(es)-1]
	if e.SMS != nil {
		return strings.Fields(e.SMS.Body)[0]
	}
	m := codeLine.FindStringSubmatch(e.Email.Text)
	if m == nil {
		h.t.Fatalf("no code in e-mail %q", e.Email.Text)
	}
	return m[1]
}

func (h *harness) outboxLen() int {
	es, _ := notify.ReadOutbox(h.outbox.Path())
	return len(es)
}

// clientKey is a P-256 key of the end user's device.
type clientKey struct {
	priv *ecdsa.PrivateKey
	pub  string // compressed hex
}

func newClientKey(t *testing.T) clientKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := k.PublicKey.Bytes()
	return clientKey{priv: k, pub: hex.EncodeToString(custody.P256Compressed(u))}
}

// signRaw is the client's raw r‖s hex signature over SHA-256(msg).
func (k clientKey) signRaw(msg string) string {
	d := sha256.Sum256([]byte(msg))
	r, s, err := ecdsa.Sign(rand.Reader, k.priv, d[:])
	if err != nil {
		panic(err)
	}
	out := make([]byte, 64)
	r.FillBytes(out[:32])
	s.FillBytes(out[32:])
	return hex.EncodeToString(out)
}

func loginMessage(sessionPub, tokenID string) string {
	return fmt.Sprintf(`{"login":{"publicKey":%q},"tokenId":%q,"type":"USAGE_TYPE_LOGIN"}`, sessionPub, tokenID)
}

func (h *harness) initOTP(c *directory.Caller, contact string) (string, string, error) {
	res, _, err := h.submit(c, "init_otp", "ACTIVITY_TYPE_INIT_OTP_V3", map[string]any{
		"otpType": "OTP_TYPE_EMAIL", "contact": contact, "appName": "Acme",
		"emailCustomization": map[string]any{
			"logoUrl":           "https://acme.example/logo.png",
			"templateVariables": `{"greeting":"Hi Alice,"}`,
		},
	})
	if err != nil {
		return "", "", err
	}
	var r wire.InitOtpResultV2
	if err := json.Unmarshal(res, &r); err != nil {
		h.t.Fatal(err)
	}
	return r.OtpId, r.OtpEncryptionTargetBundle, nil
}

func (h *harness) verify(c *directory.Caller, otpID, bundle, code, pub string) (string, []byte, error) {
	enc, err := custody.SealOTPCode(bundle, code, pub, h.keys.PublicKey(custody.OTP))
	if err != nil {
		h.t.Fatal(err)
	}
	res, data, err := h.submit(
		c,
		"verify_otp",
		"ACTIVITY_TYPE_VERIFY_OTP_V2",
		map[string]any{"otpId": otpID, "encryptedOtpBundle": enc},
	)
	if err != nil {
		return "", nil, err
	}
	var r wire.VerifyOtpResult
	if err := json.Unmarshal(res, &r); err != nil {
		h.t.Fatal(err)
	}
	return r.VerificationToken, data, nil
}

func decodeClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFullFlow(t *testing.T) {
	h := newHarness(t, 0)
	var activities [][]byte

	// init_otp by the parent's root user, in the parent organization.
	otpID, bundle, err := h.initOTP(h.root, "Alice@Example.com")
	if err != nil {
		t.Fatal(err)
	}
	code := h.lastCode()
	if len(code) != 9 || strings.Trim(code, "0123456789ABCDEFGHJKMNPQRSTVWXYZ") != "" {
		t.Fatalf("code %q: want 9 characters of Crockford's base32 (the defaults)", code)
	}
	es, _ := notify.ReadOutbox(h.outbox.Path())
	if m := es[0].Email; m.To != aliceEmail || !strings.Contains(m.Subject, "Acme") ||
		!strings.Contains(m.Text, "Hi Alice,") ||
		!strings.Contains(m.HTML, "https://acme.example/logo.png") {
		t.Fatalf("e-mail %+v", m)
	}

	// The client checks the bundle's signer and signature (as encryptOtpCodeToBundle does).
	if _, err := custody.SealOTPCode(bundle, code, "02ab", h.keys.PublicKey(custody.Signer)); err == nil {
		t.Fatal("the target bundle verified under another key")
	}
	device := newClientKey(t)
	tok, data, err := h.verify(h.root, otpID, bundle, code, device.pub)
	if err != nil {
		t.Fatal(err)
	}
	activities = append(activities, data)

	// The verification token: ES256 (single hash) by the OTP key, claims in order, exp in ms.
	parts := strings.Split(tok, ".")
	hdr, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if string(hdr) != `{"typ":"JWT","alg":"ES256"}` {
		t.Fatalf("header %s", hdr)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	if !regexp.MustCompile(`^\{"exp":"\d+","id":"[^"]+","organization_id":"[^"]+","verification_type":"OTP_TYPE_EMAIL","contact":"alice@example.com","public_key":"[0-9a-f]{66}"\}$`).
		Match(payload) {
		t.Fatalf("payload %s", payload)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	d := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(
		h.keys.Public(custody.OTP),
		d[:],
		new(big.Int).SetBytes(sig[:32]),
		new(big.Int).SetBytes(sig[32:]),
	) {
		t.Fatal("token signature does not verify with the OTP key")
	}
	claims := decodeClaims(t, tok)
	exp, _ := strconv.ParseInt(claims["exp"].(string), 10, 64)
	if want := h.clock().Add(time.Hour).UnixMilli(); exp < want-1000 || exp > want+1000 {
		t.Fatalf("exp %d, want about %d (ms, 1 h)", exp, want)
	}
	if claims["organization_id"] != h.parent.ID || claims["public_key"] != device.pub {
		t.Fatalf("claims %v", claims)
	}

	// otp_login by the parent's root user for the sub-organization.
	sessionKey := newClientKey(t)
	msg := loginMessage(sessionKey.pub, claims["id"].(string))
	var lr wire.OtpLoginResult
	activities = append(
		activities,
		h.mustSubmit(h.parentRoot, "otp_login", "ACTIVITY_TYPE_OTP_LOGIN_V2", map[string]any{
			"verificationToken": tok, "publicKey": sessionKey.pub, "invalidateExisting": true,
			"clientSignature": map[string]any{
				"publicKey": device.pub,
				"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
				"message":   msg,
				"signature": device.signRaw(msg),
			},
		}, &lr),
	)
	sc, err := session.Parse(lr.Session, h.keys.Public(custody.Notarizer), h.clock())
	if err != nil {
		t.Fatal(err)
	}
	if sc.UserID != h.alice.ID || sc.OrganizationID != h.sub.ID || sc.SessionType != session.ReadWrite ||
		sc.PublicKey != sessionKey.pub {
		t.Fatalf("session claims %+v", sc)
	}
	if want := h.clock().Add(900 * time.Second).Unix(); sc.Exp != want {
		t.Fatalf("session exp %d, want %d", sc.Exp, want)
	}
	// The session key is an expiring OTP key of alice's, found the way stamps are resolved.
	var caller *directory.Caller
	err = h.st.View(context.Background(), func(r store.Reader) error {
		var err error
		caller, err = directory.Resolver{
			Now: h.clock,
		}.ResolveAPIKey(
			context.Background(),
			r,
			h.sub.ID,
			sessionKey.pub,
			"API_KEY_CURVE_P256",
		)
		return err
	})
	if err != nil || caller.User.ID != h.alice.ID || caller.CredentialType != directory.CredentialOTPAuth ||
		caller.ParentAccess {
		t.Fatalf("session key resolves to %+v, %v", caller, err)
	}
	h.advance(901 * time.Second)
	err = h.st.View(context.Background(), func(r store.Reader) error {
		_, err := directory.Resolver{
			Now: h.clock,
		}.ResolveAPIKey(
			context.Background(),
			r,
			h.sub.ID,
			sessionKey.pub,
			"API_KEY_CURVE_P256",
		)
		return err
	})
	if err == nil {
		t.Fatal("the session key outlived the session")
	}

	// The code is nowhere in the activities or the database file.
	for _, a := range activities {
		if bytes.Contains(a, []byte(code)) {
			t.Fatalf("code in activity %s", a)
		}
	}
	h.st.Close()
	for _, f := range []string{"latchkey.db", "latchkey.db-wal"} {
		if b, err := os.ReadFile(filepath.Join(h.dir, f)); err == nil && bytes.Contains(b, []byte(code)) {
			t.Fatalf("code %q found in %s", code, f)
		}
	}
}

func TestLegacyVersionsAndSMS(t *testing.T) {
	h := newHarness(t, 0)
	var r1 wire.InitOtpResult
	h.mustSubmit(
		h.root,
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP",
		map[string]any{"otpType": "OTP_TYPE_SMS", "contact": alicePhone,
			"smsCustomization": map[string]any{"template": "Code: {{.OtpCode}}"}},
		&r1,
	)
	es, _ := notify.ReadOutbox(h.outbox.Path())
	sms := es[len(es)-1].SMS
	if sms == nil || sms.To != alicePhone || !strings.HasPrefix(sms.Body, "Code: ") {
		t.Fatalf("sms %+v", sms)
	}
	code := strings.TrimPrefix(sms.Body, "Code: ")
	if len(code) != 9 {
		t.Fatalf("default code %q: want 9 characters", code)
	}
	// Legacy verify with the plain code (lower case accepted) and no public key.
	var vr wire.VerifyOtpResult
	data := h.mustSubmit(
		h.root,
		"verify_otp",
		"ACTIVITY_TYPE_VERIFY_OTP",
		map[string]any{"otpId": r1.OtpId, "otpCode": strings.ToLower(code), "expirationSeconds": "600"},
		&vr,
	)
	if bytes.Contains(data, []byte(code)) || bytes.Contains(data, []byte(strings.ToLower(code))) ||
		!bytes.Contains(data, []byte(`[redacted]`)) {
		t.Fatalf("legacy verify activity shows the code: %s", data)
	}
	claims := decodeClaims(t, vr.VerificationToken)
	if claims["verification_type"] != "OTP_TYPE_SMS" || claims["contact"] != alicePhone || claims["public_key"] != "" {
		t.Fatalf("claims %v", claims)
	}
	// Legacy login without a client signature (the token is bound to no key).
	key := newClientKey(t)
	var lr wire.OtpLoginResult
	h.mustSubmit(
		h.parentRoot,
		"otp_login",
		"ACTIVITY_TYPE_OTP_LOGIN",
		map[string]any{"verificationToken": vr.VerificationToken, "publicKey": key.pub},
		&lr,
	)
	if sc, err := session.Parse(lr.Session, h.keys.Public(custody.Notarizer), h.clock()); err != nil ||
		sc.UserID != h.alice.ID {
		t.Fatalf("session %+v, %v", sc, err)
	}
	// Length and alphabet options.
	h.mustSubmit(
		h.root,
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": aliceEmail, "appName": "Acme",
			"otpLength": 6, "alphanumeric": false},
		nil,
	)
	if c := h.lastCode(); len(c) != 6 || strings.Trim(c, "0123456789") != "" {
		t.Fatalf("code %q: want 6 digits", c)
	}
	// INIT_OTP_V2 answers with a bundle too.
	var r2 wire.InitOtpResultV2
	h.mustSubmit(
		h.root,
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V2",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": aliceEmail, "appName": "Acme"},
		&r2,
	)
	if r2.OtpEncryptionTargetBundle == "" {
		t.Fatal("INIT_OTP_V2: no target bundle")
	}
	if c := h.lastCode(); len(c) != 9 {
		t.Fatalf("code %q", c)
	}
}

func TestWrongCodesBurn(t *testing.T) {
	h := newHarness(t, 0)
	otpID, bundle, err := h.initOTP(h.root, aliceEmail)
	if err != nil {
		t.Fatal(err)
	}
	code := h.lastCode()
	key := newClientKey(t)
	wrong := "000000000"
	if wrong == code {
		wrong = "111111111"
	}
	for i := 0; i < 3; i++ {
		_, _, err := h.verify(h.root, otpID, bundle, wrong, key.pub)
		wantErr(t, err, 400, otp.MsgInvalidCode)
	}
	// Burned: even the right code is refused now.
	_, _, err = h.verify(h.root, otpID, bundle, code, key.pub)
	wantErr(t, err, 400, otp.MsgInvalidCode)
	wantErr(t, err, 400, "too many attempts")

	// Two wrong tries, then the right one works.
	otpID, bundle, _ = h.initOTP(h.root, aliceEmail)
	code = h.lastCode()
	for i := 0; i < 2; i++ {
		_, _, err := h.verify(h.root, otpID, bundle, wrong, key.pub)
		wantErr(t, err, 400, otp.MsgInvalidCode)
	}
	if _, _, err := h.verify(h.root, otpID, bundle, code, key.pub); err != nil {
		t.Fatal(err)
	}
	// ...once.
	_, _, err = h.verify(h.root, otpID, bundle, code, key.pub)
	wantErr(t, err, 400, "already used")

	// Concurrent guesses cannot outrun the count: after ten at once, the code is burned.
	otpID, bundle, _ = h.initOTP(h.root, aliceEmail)
	code = h.lastCode()
	encs := make([]string, 10)
	for i := range encs {
		guess := fmt.Sprintf("%09d", i)
		if guess == code {
			guess = "ZZZZZZZZZ"
		}
		encs[i], _ = custody.SealOTPCode(bundle, guess, key.pub, h.keys.PublicKey(custody.OTP))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(encs))
	for i, enc := range encs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			raw := []byte(
				fmt.Sprintf(
					`{"parameters":{"otpId":%q,"encryptedOtpBundle":%q},"organizationId":%q,"timestampMs":"%d","type":"ACTIVITY_TYPE_VERIFY_OTP_V2"}`,
					otpID,
					enc,
					h.parent.ID,
					h.clock().UnixMilli(),
				),
			)
			env, err := activity.ParseEnvelope(raw)
			if err == nil {
				_, err = h.eng.Submit(
					context.Background(),
					activity.SubmitRequest{Path: "verify_otp", Raw: raw, Env: env, Caller: h.root},
				)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		wantErr(t, err, 400, otp.MsgInvalidCode)
	}
	_, _, err = h.verify(h.root, otpID, bundle, code, key.pub)
	wantErr(t, err, 400, "too many attempts")
}

func TestLiveCodeLimitAndRateLimit(t *testing.T) {
	h := newHarness(t, 10)
	for i := 0; i < 3; i++ {
		if _, _, err := h.initOTP(h.root, aliceEmail); err != nil {
			t.Fatal(err)
		}
	}
	n := h.outboxLen()
	_, _, err := h.initOTP(h.root, aliceEmail)
	wantErr(t, err, 429, otp.MsgMaxOTPs)
	if h.outboxLen() != n {
		t.Fatal("a refused init_otp sent a code")
	}
	// Another contact is not limited by alice's codes.
	if _, _, err := h.initOTP(h.root, "bob@example.com"); err != nil {
		t.Fatal(err)
	}
	// Once they expire, new codes can be initiated.
	h.advance(301 * time.Second)
	if _, _, err := h.initOTP(h.root, aliceEmail); err != nil {
		t.Fatal(err)
	}

	// The send rate limit (default: 3 per 3 minutes), with codes used up as they come.
	h = newHarness(t, 0)
	key := newClientKey(t)
	for i := 0; i < 3; i++ {
		otpID, bundle, err := h.initOTP(h.root, aliceEmail)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := h.verify(h.root, otpID, bundle, h.lastCode(), key.pub); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = h.initOTP(h.root, aliceEmail)
	wantErr(t, err, 429, "too many codes sent to this contact")
	h.advance(3*time.Minute + time.Second)
	if _, _, err := h.initOTP(h.root, aliceEmail); err != nil {
		t.Fatal(err)
	}
}

func TestExpiredCode(t *testing.T) {
	h := newHarness(t, 0)
	res, _, err := h.submit(
		h.root,
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": aliceEmail,
			"appName": "Acme", "expirationSeconds": "60"},
	)
	if err != nil {
		t.Fatal(err)
	}
	var r wire.InitOtpResultV2
	_ = json.Unmarshal(res, &r)
	code := h.lastCode()
	h.advance(61 * time.Second)
	_, _, err = h.verify(h.root, r.OtpId, r.OtpEncryptionTargetBundle, code, newClientKey(t).pub)
	wantErr(t, err, 400, "expired")
	// Out-of-range options are refused.
	_, _, err = h.submit(
		h.root,
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{
			"otpType":           "OTP_TYPE_EMAIL",
			"contact":           aliceEmail,
			"appName":           "Acme",
			"expirationSeconds": "601",
		},
	)
	wantErr(t, err, 400, "expirationSeconds")
	_, _, err = h.submit(
		h.root,
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": aliceEmail, "appName": "Acme", "otpLength": 5},
	)
	wantErr(t, err, 400, "otpLength")
	_, _, err = h.submit(
		h.root,
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{"otpType": "OTP_TYPE_SMS", "contact": "5551234", "appName": "Acme"},
	)
	wantErr(t, err, 400, "E.164")
}

// login verifies a fresh code and returns the token, its id and the device key it is bound to.
func (h *harness) token() (string, string, clientKey) {
	h.t.Helper()
	otpID, bundle, err := h.initOTP(h.root, aliceEmail)
	if err != nil {
		h.t.Fatal(err)
	}
	device := newClientKey(h.t)
	tok, _, err := h.verify(h.root, otpID, bundle, h.lastCode(), device.pub)
	if err != nil {
		h.t.Fatal(err)
	}
	return tok, decodeClaims(h.t, tok)["id"].(string), device
}

func (h *harness) login(c *directory.Caller, tok string, sessionPub string, cs map[string]any) error {
	_, _, err := h.submit(
		c,
		"otp_login",
		"ACTIVITY_TYPE_OTP_LOGIN_V2",
		map[string]any{"verificationToken": tok, "publicKey": sessionPub, "clientSignature": cs},
	)
	return err
}

func TestTokenReuseAndClientSignature(t *testing.T) {
	h := newHarness(t, 100)
	tok, tid, device := h.token()
	sk := newClientKey(t)
	good := func(msg string) map[string]any {
		return map[string]any{
			"publicKey": device.pub,
			"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
			"message":   msg,
			"signature": device.signRaw(msg),
		}
	}
	// A signature by another key, over another token id, another session key, a bad signature.
	other := newClientKey(t)
	msg := loginMessage(sk.pub, tid)
	wantErr(
		t,
		h.login(
			h.parentRoot,
			tok,
			sk.pub,
			map[string]any{
				"publicKey": other.pub,
				"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
				"message":   msg,
				"signature": other.signRaw(msg),
			},
		),
		400,
		"bound to",
	)
	wantErr(t, h.login(h.parentRoot, tok, sk.pub, good(loginMessage(sk.pub, id.New()))), 400, "tokenId")
	wantErr(t, h.login(h.parentRoot, tok, sk.pub, good(loginMessage(other.pub, tid))), 400, "login.publicKey")
	bad := good(msg)
	bad["signature"] = device.signRaw(msg + " ")
	wantErr(t, h.login(h.parentRoot, tok, sk.pub, bad), 400, "does not verify")
	wantErr(
		t,
		h.login(h.parentRoot, tok, sk.pub, good(`{"tokenId":"`+tid+`","type":"USAGE_TYPE_SIGNUP"}`)),
		400,
		"USAGE_TYPE_LOGIN",
	)
	// Key order in the message does not matter; the token then works once.
	reordered := fmt.Sprintf(`{"type":"USAGE_TYPE_LOGIN","tokenId":%q,"login":{"publicKey":%q}}`, tid, sk.pub)
	if err := h.login(h.parentRoot, tok, sk.pub, good(reordered)); err != nil {
		t.Fatal(err)
	}
	wantErr(t, h.login(h.parentRoot, tok, newClientKey(t).pub, good(loginMessage(sk.pub, tid))), 400, "already used")

	// A forged token (signed by another key) and an expired one.
	parts := strings.Split(tok, ".")
	wantErr(
		t,
		h.login(
			h.parentRoot,
			parts[0]+"."+parts[1]+"."+base64.RawURLEncoding.EncodeToString(make([]byte, 64)),
			sk.pub,
			good(msg),
		),
		400,
		"invalid verification token",
	)
	tok2, tid2, device2 := h.token()
	h.advance(time.Hour + time.Second)
	msg2 := loginMessage(sk.pub, tid2)
	wantErr(
		t,
		h.login(
			h.parentRoot,
			tok2,
			sk.pub,
			map[string]any{
				"publicKey": device2.pub,
				"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
				"message":   msg2,
				"signature": device2.signRaw(msg2),
			},
		),
		400,
		"expired",
	)
}

func TestAccess(t *testing.T) {
	h := newHarness(t, 100)
	// A non-root user of the parent cannot (no policies allow it).
	_, _, err := h.initOTP(h.member, aliceEmail)
	wantErr(t, err, 403, "")
	// The sub-organization's root user may run them in its own organization.
	aliceCaller := &directory.Caller{
		User:           h.alice,
		Org:            h.sub,
		Target:         h.sub,
		CredentialID:   id.New(),
		CredentialType: directory.CredentialAPIKeyP256,
		PublicKey: "02" + strings.Repeat(
			"cd",
			32,
		),
		Scheme:    "SIGNATURE_SCHEME_TK_API_P256",
		Signature: "3006020101020101",
	}
	if _, _, err := h.initOTP(aliceCaller, aliceEmail); err != nil {
		t.Fatal(err)
	}
	// The parent's root user may run them in the sub-organization.
	if _, _, err := h.initOTP(h.parentRoot, aliceEmail); err != nil {
		t.Fatal(err)
	}
	// A parent's non-root user may not.
	memberInSub := *h.member
	memberInSub.Target, memberInSub.ParentAccess = h.sub, true
	_, _, err = h.initOTP(&memberInSub, aliceEmail)
	wantErr(t, err, 403, "")
	// A token issued in the sub-organization does not log in to the parent.
	otpID, bundle, _ := h.initOTP(aliceCaller, aliceEmail)
	device := newClientKey(t)
	tok, _, err := h.verify(aliceCaller, otpID, bundle, h.lastCode(), device.pub)
	if err != nil {
		t.Fatal(err)
	}
	sk := newClientKey(t)
	msg := loginMessage(sk.pub, decodeClaims(t, tok)["id"].(string))
	wantErr(
		t,
		h.login(
			h.root,
			tok,
			sk.pub,
			map[string]any{
				"publicKey": device.pub,
				"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
				"message":   msg,
				"signature": device.signRaw(msg),
			},
		),
		400,
		"another organization",
	)
}

// A send that fails does not fail the activity: the code was issued in the committed
// transaction and its message waits in the outbox, retried until the sender works again.
func TestDeliveryFailureIsRetriedFromTheOutbox(t *testing.T) {
	h := newHarness(t, 100)
	h.mail.fail = true
	if _, _, err := h.initOTP(h.root, aliceEmail); err != nil {
		t.Fatalf("init_otp with the sender down: %v", err)
	}
	if es, _ := notify.ReadOutbox(h.outbox.Path()); len(es) != 0 {
		t.Fatalf("%d messages delivered while the sender was down", len(es))
	}
	h.mail.fail = false
	h.messages.Flush(context.Background())
	es, _ := notify.ReadOutbox(h.outbox.Path())
	if len(es) != 1 || es[0].Email == nil || es[0].Email.To != aliceEmail {
		t.Fatalf("after the sender came back: %+v", es)
	}
	h.messages.Flush(context.Background())
	if es, _ := notify.ReadOutbox(h.outbox.Path()); len(es) != 1 {
		t.Fatalf("a delivered message was sent again: %d", len(es))
	}
}

// Queued codes count toward the contact's send rate, whether their sends succeed or not.
func TestQueuedCodesCountTowardTheSendRate(t *testing.T) {
	h := newHarness(t, 3)
	h.mail.fail = true
	for i := 0; i < 3; i++ {
		if _, _, err := h.initOTP(h.root, aliceEmail); err != nil {
			t.Fatal(err)
		}
	}
	h.mail.fail = false
	_, _, err := h.initOTP(h.root, aliceEmail)
	wantErr(t, err, 429, "")
}

func TestSafeJSON(t *testing.T) {
	in := []byte(`{"contact":"a>b?c~d@exämple.com 😀"}`)
	out := otp.SafeJSON(in)
	for _, b := range out {
		if b >= 0x80 || b == '>' || b == '?' || b == '~' {
			t.Fatalf("SafeJSON left %q in %s", b, out)
		}
	}
	var a, b map[string]string
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &b); err != nil || a["contact"] != b["contact"] {
		t.Fatalf("SafeJSON changed the value: %s (%v)", out, err)
	}
	if enc := base64.RawURLEncoding.EncodeToString(out); strings.ContainsAny(enc, "-_") {
		t.Fatalf("base64url has - or _: %s", enc)
	}
}

// Expired verification tokens are swept by later verifications, a bounded batch at a time.
func TestStaleTokensAreSwept(t *testing.T) {
	h := newHarness(t, 100)
	count := func() int {
		n := 0
		_ = h.st.View(context.Background(), func(r store.Reader) error {
			recs, err := r.List(context.Background(), otp.KindVerificationToken, h.parent.ID, store.ListOptions{})
			n = len(recs)
			return err
		})
		return n
	}
	_, _, _ = h.token()
	_, _, _ = h.token()
	if n := count(); n != 2 {
		t.Fatalf("%d tokens, want 2", n)
	}
	h.advance(2 * time.Hour) // past the default token lifetime (1 hour)
	_, _, _ = h.token()
	if n := count(); n != 1 {
		t.Fatalf("%d tokens after a verification past the others' expiry, want 1", n)
	}
}
