package authproxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/wire"
)

func TestWalletShapes(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		curve   string
		path    string
		format  string
		wantErr string
	}{
		{
			"spec sample",
			`{"path":"m/44'/501'/0'/0'","curve":"CURVE_TYPE_ED25519"}`,
			"CURVE_ED25519",
			"m/44'/501'/0'/0'",
			"ADDRESS_FORMAT_SOLANA",
			"",
		},
		{
			"swagger curve name",
			`{"curve":"CURVE_SECP256K1"}`,
			"CURVE_SECP256K1",
			"m/44'/60'/0'/0/0",
			"ADDRESS_FORMAT_ETHEREUM",
			"",
		},
		{
			"path only",
			`{"path":"m/44'/60'/0'/0/1"}`,
			"CURVE_SECP256K1",
			"m/44'/60'/0'/0/1",
			"ADDRESS_FORMAT_ETHEREUM",
			"",
		},
		{
			"address format given",
			`{"curve":"curve_type_secp256k1","addressFormat":"ADDRESS_FORMAT_TRON"}`,
			"CURVE_SECP256K1",
			"m/44'/60'/0'/0/0",
			"ADDRESS_FORMAT_TRON",
			"",
		},
		{
			"swagger shape",
			`{"walletName":"w","accounts":[{"curve":"CURVE_P256","pathFormat":"PATH_FORMAT_BIP32","path":"m/0'","addressFormat":"ADDRESS_FORMAT_COMPRESSED"}]}`,
			"CURVE_P256",
			"m/0'",
			"ADDRESS_FORMAT_COMPRESSED",
			"",
		},
		{"unknown curve", `{"curve":"CURVE_TYPE_RSA"}`, "", "", "", "wallet.curve"},
		{
			"both shapes",
			`{"curve":"CURVE_ED25519","accounts":[{"curve":"CURVE_P256","pathFormat":"PATH_FORMAT_BIP32","path":"m/0'","addressFormat":"ADDRESS_FORMAT_COMPRESSED"}]}`,
			"",
			"",
			"",
			"not both",
		},
	}
	for _, c := range cases {
		var w walletIn
		if err := json.Unmarshal([]byte(c.in), &w); err != nil {
			t.Fatal(err)
		}
		p, err := w.params()
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err != nil || len(p.Accounts) != 1 || string(p.Accounts[0].Curve) != c.curve ||
			p.Accounts[0].Path != c.path ||
			string(p.Accounts[0].AddressFormat) != c.format ||
			p.WalletName == "" {
			t.Errorf("%s: %+v, %v", c.name, p, err)
		}
	}
}

func TestClientSignatureShapes(t *testing.T) {
	tok := "e30.eyJpZCI6InQiLCJjb250YWN0IjoiYUBiLmMiLCJ2ZXJpZmljYXRpb25fdHlwZSI6Ik9UUF9UWVBFX0VNQUlMIiwicHVibGljX2tleSI6IjAyYWIifQ.x"
	var in struct {
		A *clientSig `json:"a"`
		B *clientSig `json:"b"`
	}
	if err := json.Unmarshal([]byte(`{"a":{"publicKey":"02cd","scheme":"CLIENT_SIGNATURE_SCHEME_API_P256","message":"m","signature":"00"},"b":"`+strings.Repeat("ab", 64)+`"}`), &in); err != nil {
		t.Fatal(err)
	}
	if w, err := in.A.wire("a", tok); err != nil || w.PublicKey != "02cd" || w.Message != "m" {
		t.Fatalf("object form: %+v %v", w, err)
	}
	w, err := in.B.wire("b", tok)
	if err != nil || w.PublicKey != "02ab" || w.Message != tok || w.Signature != strings.Repeat("ab", 64) ||
		w.Scheme != "CLIENT_SIGNATURE_SCHEME_API_P256" {
		t.Fatalf("hex form: %+v %v", w, err)
	}
	for _, bad := range []string{"zz", "abcd", strings.Repeat("ab", 63)} {
		if _, err := (&clientSig{hex: bad}).wire("client_signature", tok); err == nil ||
			!strings.Contains(err.Error(), "client_signature") {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	if _, err := (&clientSig{hex: strings.Repeat("ab", 64)}).wire("client_signature", ""); err == nil {
		t.Error("a hex signature without a token accepted")
	}
	if w, err := (*clientSig)(nil).wire("x", tok); w != nil || err != nil {
		t.Error("no signature must stay none")
	}
}

// fakeCoordinator answers every activity as completed with a canned result and every query
// with an empty list.
type fakeCoordinator struct{}

func (fakeCoordinator) Do(ctx context.Context, kind, op string, body []byte, h, v string) (int, []byte, error) {
	if kind == "query" {
		return 200, []byte(`{"organizationIds":[],"oauth2Credentials":[]}`), nil
	}
	return 200, []byte(
		`{"activity":{"status":"ACTIVITY_STATUS_COMPLETED","result":{"x":{"otpId":"o","verificationToken":"t","session":"s","subOrganizationId":"so","rootUserIds":["u"]}}}}`,
	), nil
}

const testSubOrg = "22222222-2222-4222-8222-222222222222"

func testProxy(t testing.TB) (*Server, *Config) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	master, _ := custody.ParseMasterKey([]byte(strings.Repeat("ab", 32)))
	kr, err := custody.OpenKeyring(ctx, st, master)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := custody.LoadServerKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	org := &directory.Organization{
		ID:        "11111111-1111-4111-8111-111111111111",
		Name:      "Acme",
		Features:  []directory.Feature{},
		CreatedAt: now,
		UpdatedAt: now,
	}
	sub := &directory.Organization{
		ID:        testSubOrg,
		ParentID:  org.ID,
		Name:      "sub",
		Features:  []directory.Feature{},
		CreatedAt: now,
		UpdatedAt: now,
	}
	if err := st.Update(ctx, func(tx store.Tx) error {
		if err := directory.SaveOrganization(ctx, tx, org); err != nil {
			return err
		}
		return directory.SaveOrganization(ctx, tx, sub)
	}); err != nil {
		t.Fatal(err)
	}
	m := &Manager{Store: st, Custodian: custody.NewCustodian(kr, keys)}
	s := DefaultSettings()
	s.EnabledProviders = []string{"email", "sms"}
	cfg, err := m.Enable(ctx, org.ID, s)
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Configs: m, Coordinator: fakeCoordinator{}, Now: func() time.Time { return now }}
	srv.Handler()
	return srv, cfg
}

// FuzzRequests feeds every operation arbitrary bodies: each answer is a result or an API
// error that is not internal (bad input is a 400 naming the field, never a 500 or a panic).
func FuzzRequests(f *testing.F) {
	for _, seed := range []string{`{}`, `{"otpType":"OTP_TYPE_EMAIL","contact":"a@b.c"}`, `{"wallet":{"curve":"CURVE_TYPE_ED25519"}}`,
		`{"client_signature":"abab","verificationToken":"a.b.c","publicKey":"02"}`, `{"clientSignature":7}`, `[`, `{"apiKeys":[{"public_key":1}]}`,
		`{"filterType":"EMAIL","filterValue":"x"}`, `{"provider":"OAUTH2_PROVIDER_X","authCode":"a","redirectUri":"r","codeVerifier":"c","nonce":"n","clientId":"i"}`} {
		f.Add(seed)
	}
	srv, cfg := testProxy(f)
	routes := srv.routes()
	f.Fuzz(func(t *testing.T, body string) {
		for op, h := range routes {
			_, err := h(context.Background(), &call{s: srv, cfg: cfg}, []byte(body))
			if err == nil {
				continue
			}
			var up *upstream
			if errors.As(err, &up) {
				continue
			}
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Code == apierr.Internal ||
				ae.Code.HTTPStatus() == http.StatusInternalServerError {
				t.Fatalf("%s(%q): %v", op, body, err)
			}
		}
	})
}

// The requests the proxy builds are the activity's intents as the swagger defines them.
func TestBuiltIntentsValidate(t *testing.T) {
	srv, cfg := testProxy(t)
	var got []string
	rec := recorder{got: &got}
	srv.Coordinator = rec
	c := &call{s: srv, cfg: cfg}
	for op, body := range map[string]string{
		"signup":        `{"userEmail":"a@b.c","apiKeys":[{"publicKey":"02ab"}],"wallet":{"curve":"CURVE_TYPE_ED25519"}}`,
		"otp_init_v2":   `{"otpType":"OTP_TYPE_SMS","contact":"+14155550100"}`,
		"otp_verify":    `{"otpId":"o","otpCode":"123456","public_key":"02ab"}`,
		"otp_verify_v2": `{"otpId":"o","encryptedOtpBundle":"b"}`,
		"oauth_login":   `{"oidcToken":"t","publicKey":"02ab","organizationId":"` + testSubOrg + `"}`,
	} {
		if _, err := srv.routes()[op](context.Background(), c, []byte(body)); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	for _, b := range got {
		env, err := parseSubmit([]byte(b))
		if err != nil {
			t.Errorf("%s: %v", b, err)
			continue
		}
		w, _ := wire.Lookup(wire.Submit, env.path)
		v, ok := w.Version(env.Type)
		if !ok {
			t.Errorf("%s: type %s", env.path, env.Type)
			continue
		}
		intent := v.NewIntent()
		if err := json.Unmarshal(env.Parameters, intent); err != nil {
			t.Errorf("%s: %v", env.path, err)
		} else if err := intent.Validate("parameters"); err != nil {
			t.Errorf("%s: %v in %s", env.path, err, env.Parameters)
		}
	}
	if len(got) != 5 {
		t.Fatalf("%d activities sent", len(got))
	}
}

type recorder struct{ got *[]string }

func (r recorder) Do(ctx context.Context, kind, op string, body []byte, h, v string) (int, []byte, error) {
	if kind == "submit" {
		*r.got = append(*r.got, op+" "+string(body))
	}
	return fakeCoordinator{}.Do(ctx, kind, op, body, h, v)
}

type sentSubmit struct {
	path       string
	Type       string          `json:"type"`
	Parameters json.RawMessage `json:"parameters"`
}

func parseSubmit(b []byte) (*sentSubmit, error) {
	path, body, _ := strings.Cut(string(b), " ")
	var s sentSubmit
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return nil, err
	}
	s.path = path
	return &s, nil
}
