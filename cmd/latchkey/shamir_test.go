package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"

	"github.com/latchkey/latchkey/internal/client"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store"
)

// startSealed serves a --seal shamir deployment in process, as serve does; stop drains it.
func startSealed(t *testing.T, dir string, databaseURL ...string) (*server.Sealed, func()) {
	t.Helper()
	z, err := server.OpenSealed(
		context.Background(),
		server.Config{
			DataDir:       dir,
			DatabaseURL:   strings.Join(databaseURL, ""),
			MustExist:     true,
			Exclusive:     true,
			Seal:          custody.SealShamir,
			APIAddr:       "127.0.0.1:0",
			ProxyAddr:     "127.0.0.1:0",
			DashboardAddr: "127.0.0.1:0",
			MetricsAddr:   "127.0.0.1:0",
			Log:           slog.New(slog.DiscardHandler),
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- z.Run(ctx, 5*time.Second, func(string) { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	return z, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}
}

func shamirGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// unsealWith runs latchkey unseal with share on stdin.
func unsealWith(t *testing.T, url, share string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	c := client.Commands{
		Stdin:      strings.NewReader(share + "\n"),
		Stdout:     &out,
		Stderr:     io.Discard,
		ParseFlags: parseFlags,
	}
	err := c.Unseal(context.Background(), []string{"--api-url", url})
	return out.String(), err
}

// --seal shamir: init splits a new master key into 3 shares (any 2 unseal) and prints them once;
// serve starts sealed (every store-backed call 503, health says sealed, metrics serve); shares
// given one by one unseal it (a wrong one is named and resets the progress); it signs; a root
// user's stamped seal seals it again (503), and the same shares unseal it to sign with the same
// wallet, also after a restart. Both events are audited.
func TestShamirSeal(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testShamirSeal(t, t.TempDir(), "") })
	t.Run("postgres", func(t *testing.T) { testShamirSeal(t, t.TempDir(), freshPostgres(t)) })
}

func testShamirSeal(t *testing.T, dir, databaseURL string) {
	storeArgs := []string{"--data-dir", dir}
	if databaseURL != "" {
		storeArgs = append(storeArgs, "--database-url", databaseURL)
	}
	ctx := context.Background()
	priv, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	var out, errOut bytes.Buffer
	if err := run(ctx, append([]string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub,
		"--seal", "shamir", "--key-shares", "3", "--key-threshold", "2"}, storeArgs...), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(errOut.String(), "shown ONCE") {
		t.Fatalf("init printed:\n%s\n%s", out.String(), errOut.String())
	}
	var shares []string
	for i, l := range lines[:3] {
		label, share, ok := strings.Cut(l, ": ")
		if !ok || label != "Unseal share "+string(rune('1'+i))+" of 3 (any 2 unseal)" ||
			len(share) != custody.ShareTextLen {
			t.Fatalf("share line %q", l)
		}
		shares = append(shares, share)
	}
	var created map[string]string
	if err := json.Unmarshal([]byte(lines[3]), &created); err != nil || created["organizationId"] == "" {
		t.Fatalf("init's JSON: %v %q", err, lines[3])
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "master") {
			t.Fatalf("a master key file in the data directory: %s", e.Name())
		}
	}
	// The store-opening commands take shares (here on stdin) to open the deployment.
	keys := func(in string) (string, error) {
		old := shareInput
		shareInput = strings.NewReader(in)
		defer func() { shareInput = old }()
		var out bytes.Buffer
		err := run(ctx, append([]string{"keys", "--seal", "shamir"}, storeArgs...), &out, io.Discard)
		return out.String(), err
	}
	if _, err := keys(shares[1] + "\n"); err == nil ||
		!strings.Contains(err.Error(), "no share on stdin (1 of the 2 needed given)") {
		t.Fatalf("keys with one share: %v", err)
	}
	if _, err := keys(shares[1] + "\n" + shares[1] + "\n"); err == nil ||
		!strings.Contains(err.Error(), "already given") {
		t.Fatalf("keys with a share twice: %v", err)
	}
	if out, err := keys(shares[1] + "\n" + shares[2] + "\n"); err != nil || !strings.Contains(out, "signerPublicKey") {
		t.Fatalf("keys with two shares: %v %s", err, out)
	}

	z, stop := startSealed(t, dir, databaseURL)
	a := &api{t: t, url: z.APIURL(), org: created["organizationId"], priv: priv}
	sealedMsg := func(given int) string {
		return `{"code":14,"message":"Latchkey is sealed: unseal it with latchkey unseal (2 of 3 shares given: ` + string(
			rune('0'+given),
		) + `)","details":[]}`
	}
	checkSealed := func(given int) {
		t.Helper()
		resp, err := http.Post(
			z.APIURL()+"/public/v1/query/whoami",
			"application/json",
			strings.NewReader(`{"organizationId":"`+a.org+`"}`),
		)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || string(b) != sealedMsg(given) {
			t.Fatalf("a sealed API answers %d %s", resp.StatusCode, b)
		}
		for _, u := range []string{z.ProxyURL() + "/v1/otp_init", z.DashboardURL() + "/orgs"} {
			if code, body := shamirGet(t, u); code != http.StatusServiceUnavailable || body != sealedMsg(given) {
				t.Fatalf("%s sealed: %d %s", u, code, body)
			}
		}
		if code, body := shamirGet(t, z.APIURL()+"/readyz"); code != http.StatusServiceUnavailable ||
			!strings.Contains(body, `"status":"sealed"`) {
			t.Fatalf("readyz sealed: %d %s", code, body)
		}
		if code, body := shamirGet(t, z.APIURL()+"/healthz"); code != http.StatusServiceUnavailable ||
			!strings.Contains(body, `"sealed":true`) {
			t.Fatalf("healthz sealed: %d %s", code, body)
		}
		if code, _ := shamirGet(t, z.APIURL()+"/livez"); code != http.StatusOK {
			t.Fatalf("livez sealed: %d", code)
		}
		if code, body := shamirGet(t, z.MetricsURL()+"/metrics"); code != http.StatusOK ||
			!strings.Contains(body, "latchkey_http_requests_total") {
			t.Fatalf("metrics sealed: %d", code)
		}
		if code, body := shamirGet(t, z.DashboardURL()+"/login"); code != http.StatusServiceUnavailable ||
			!strings.Contains(body, "Sealed:") ||
			!strings.Contains(body, `name="share"`) {
			t.Fatalf("the dashboard's sealed sign-in page: %d %s", code, body)
		}
	}
	checkSealed(0)

	// One share: progress 1 of 2.
	if msg, err := unsealWith(t, z.APIURL(), shares[0]); err != nil ||
		!strings.Contains(msg, "sealed: 1 of the 2 shares needed given") {
		t.Fatalf("first share: %q %v", msg, err)
	}
	checkSealed(1)
	// A wrong share (another split's): named, progress reset, the share never in the error.
	other, _ := custody.NewMasterKey()
	_, wrong, _ := custody.SplitMasterKey(other, 3, 2)
	wrongShare := string(wrong.Text(1))
	if _, err := unsealWith(t, z.APIURL(), wrongShare); err == nil ||
		!strings.Contains(err.Error(), "share 2: it belongs to another split") ||
		!strings.Contains(err.Error(), "unseal progress reset") ||
		strings.Contains(err.Error(), wrongShare) {
		t.Fatalf("a wrong share: %v", err)
	}
	if z.Status().Progress != 0 {
		t.Fatalf("progress after a wrong share: %+v", z.Status())
	}
	// Not a share at all: refused by the client.
	if _, err := unsealWith(t, z.APIURL(), `"}`); err == nil || !strings.Contains(err.Error(), "not an unseal share") {
		t.Fatalf("garbage: %v", err)
	}
	// Two good shares: unsealed; it signs.
	unsealWith(t, z.APIURL(), shares[2])
	if msg, err := unsealWith(t, z.APIURL(), shares[0]); err != nil || msg != "Latchkey is unsealed.\n" {
		t.Fatalf("second share: %q %v", msg, err)
	}
	if code, body := shamirGet(t, z.APIURL()+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz unsealed: %d %s", code, body)
	}
	w := a.submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": []any{map[string]any{
			"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}},
	)
	addr := w["createWalletResult"].(map[string]any)["addresses"].([]any)[0].(string)
	sign := func() string {
		t.Helper()
		sig := a.submit(
			"sign_raw_payload",
			"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
			map[string]any{"signWith": addr, "payload": strings.Repeat("cd", 32),
				"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
		)
		r, _ := sig["signRawPayloadResult"].(map[string]any)["r"].(string)
		if r == "" {
			t.Fatalf("signature: %v", sig)
		}
		return r
	}
	r1 := sign()

	// Sealing: refused unstamped, and for a key that is not a root user's of a top-level
	// organization; done by the root user's key.
	keyFile := filepath.Join(t.TempDir(), "root.json")
	kb, _ := json.Marshal(
		map[string]string{"name": "root", "curve": string(stamp.CurveP256), "publicKey": pub, "privateKey": priv},
	)
	os.WriteFile(keyFile, kb, 0o600)
	if resp, err := http.Post(z.APIURL()+server.SealPath, "application/json", strings.NewReader(`{"organizationId":"`+a.org+`"}`)); err != nil ||
		resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an unstamped seal: %v %v", err, resp.StatusCode)
	}
	strangerPriv, _, _ := stamp.GenerateKey(stamp.CurveP256)
	stranger := filepath.Join(t.TempDir(), "stranger.json")
	sb, _ := json.Marshal(
		map[string]string{"name": "stranger", "curve": string(stamp.CurveP256), "privateKey": strangerPriv},
	)
	os.WriteFile(stranger, sb, 0o600)
	if err := run(ctx, []string{"seal", "--api-url", z.APIURL(), "--key", stranger, "--organization-id", a.org}, io.Discard, io.Discard); err == nil ||
		z.Server() == nil {
		t.Fatalf("a stranger's seal: %v", err)
	}
	out.Reset()
	if err := run(ctx, []string{"seal", "--api-url", z.APIURL(), "--key", keyFile, "--organization-id", a.org}, &out, io.Discard); err != nil ||
		!strings.Contains(out.String(), "sealed: 0 of the 2") {
		t.Fatalf("seal: %q %v", out.String(), err)
	}
	checkSealed(0)
	unsealWith(t, z.APIURL(), shares[1])
	if msg, err := unsealWith(t, z.APIURL(), shares[2]); err != nil || !strings.Contains(msg, "unsealed") {
		t.Fatalf("unseal after seal: %q %v", msg, err)
	}
	if sign() == "" || r1 == "" {
		t.Fatal("no signature after unsealing again")
	}
	// Both events are in the operators' audit log.
	var actions []string
	z.Server().Store.View(ctx, func(r store.Reader) error {
		recs, err := r.List(ctx, dashboard.KindAudit, "", store.ListOptions{})
		for _, rec := range recs {
			var au dashboard.Audit
			json.Unmarshal(rec.Data, &au)
			actions = append(actions, au.Action+" by "+au.Operator)
		}
		return err
	})
	joined := strings.Join(actions, "; ")
	if strings.Count(joined, server.ActionUnsealed+" by (share holders)") != 2 ||
		!strings.Contains(joined, server.ActionSealed+" by user ") {
		t.Fatalf("audit log: %s", joined)
	}
	stop()

	// Restarted: sealed again; unsealed, the same wallet signs.
	z, stop = startSealed(t, dir, databaseURL)
	defer stop()
	a.url = z.APIURL()
	checkSealed(0)
	unsealWith(t, z.APIURL(), shares[0])
	unsealWith(t, z.APIURL(), shares[1])
	sign()
}

// The refusals of --seal shamir, each before anything is written.
func TestShamirSealRefusals(t *testing.T) {
	ctx := context.Background()
	_, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	mk := filepath.Join(t.TempDir(), "master.key")
	custody.GenerateMasterKeyFile(mk)
	fileDir := t.TempDir()
	if err := run(ctx, []string{"init", "--org-name", "F", "--user-name", "u", "--api-public-key", pub, "--data-dir", fileDir, "--master-key-file", mk}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	shamirDir := t.TempDir()
	if err := run(ctx, []string{"init", "--org-name", "S", "--user-name", "u", "--api-public-key", pub, "--data-dir", shamirDir, "--seal", "shamir",
		"--key-shares", "2", "--key-threshold", "2"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	initArgs := func(dir string, extra ...string) []string {
		return append(
			[]string{"init", "--org-name", "A", "--user-name", "u", "--api-public-key", pub, "--data-dir", dir},
			extra...)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"threshold above shares", initArgs(t.TempDir(), "--seal", "shamir", "--key-shares", "3", "--key-threshold", "4"), "--key-threshold 4 is more than --key-shares 3"},
		{"more than 255 shares", initArgs(t.TempDir(), "--seal", "shamir", "--key-shares", "256", "--key-threshold", "2"), "between 2 and 255"},
		{"a threshold of one", initArgs(t.TempDir(), "--seal", "shamir", "--key-shares", "3", "--key-threshold", "1"), "at least 2"},
		{"no split given", initArgs(t.TempDir(), "--seal", "shamir"), "needs --key-shares N and --key-threshold K"},
		{"shares without the seal", initArgs(t.TempDir(), "--master-key-file", mk, "--key-shares", "3", "--key-threshold", "2"), "give --seal shamir"},
		{"with --dev", []string{"serve", "--seal", "shamir", "--dev", "--data-dir", t.TempDir()}, "--seal shamir is for production deployments"},
		{"with a master key file", initArgs(t.TempDir(), "--seal", "shamir", "--key-shares", "3", "--key-threshold", "2", "--master-key-file", mk), "give no --master-key-file"},
		{"serve shamir on a file deployment", []string{"serve", "--seal", "shamir", "--data-dir", fileDir, "--api-addr", "127.0.0.1:0"}, "master key is a file (it has no shamir seal record)"},
		{"a file seal on a shamir deployment", []string{"keys", "--data-dir", shamirDir, "--master-key-file", mk}, "split into 2 shares (any 2 unseal it): start it with latchkey serve --seal shamir"},
		{"init again on a shamir deployment", initArgs(shamirDir, "--seal", "shamir", "--key-shares", "3", "--key-threshold", "2"), "already split into shares"},
		{"serve shamir with no deployment", []string{"serve", "--seal", "shamir", "--data-dir", t.TempDir(), "--api-addr", "127.0.0.1:0"}, "no Latchkey deployment"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := run(ctx, c.args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
}

// init --share-recipients prints each share encrypted to its holder's age recipient (no share
// in the clear); two holders decrypt theirs and unseal.
func TestShamirShareRecipients(t *testing.T) {
	dir := t.TempDir()
	_, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	var ids []*age.X25519Identity
	var list []string
	for range 3 {
		id, _ := age.GenerateX25519Identity()
		ids, list = append(ids, id), append(list, id.Recipient().String())
	}
	args := []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub, "--data-dir", dir,
		"--seal", "shamir", "--key-shares", "3", "--key-threshold", "2", "--share-recipients"}
	if err := run(context.Background(), append(args, strings.Join(list[:2], ",")), io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "2 for --key-shares 3") {
		t.Fatalf("two recipients for three shares: %v", err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), append(args, strings.Join(list, ",")), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	// Each armored block, in order.
	var blocks []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		if strings.HasPrefix(line, "-----BEGIN AGE") || cur.Len() > 0 {
			cur.WriteString(line)
		}
		if strings.HasPrefix(line, "-----END AGE") {
			blocks, cur = append(blocks, cur.String()), strings.Builder{}
		}
	}
	if len(blocks) != 3 || !strings.Contains(out.String(), "encrypted to "+list[2]) {
		t.Fatalf("init printed:\n%s", out.String())
	}
	z, stop := startSealed(t, dir)
	defer stop()
	for _, i := range []int{2, 0} {
		r, err := age.Decrypt(armor.NewReader(strings.NewReader(blocks[i])), ids[i])
		if err != nil {
			t.Fatalf("holder %d: %v", i+1, err)
		}
		share, _ := io.ReadAll(r)
		if _, err := unsealWith(t, z.APIURL(), strings.TrimSpace(string(share))); err != nil {
			t.Fatal(err)
		}
	}
	if z.Server() == nil {
		t.Fatalf("not unsealed: %+v", z.Status())
	}
}

// sharesIn are the shares printed in out ("Unseal share i of N (any K unseal): …" lines).
func sharesIn(out string) []string {
	var shares []string
	for _, l := range strings.Split(out, "\n") {
		if _, share, ok := strings.Cut(l, " unseal): "); ok && strings.HasPrefix(l, "Unseal share ") {
			shares = append(shares, share)
		}
	}
	return shares
}

// keyring rewrap moves a file deployment to a shamir seal (new shares printed), re-splits a
// shamir deployment (the old shares no longer unseal, the new ones do) and moves it back to a
// file; the wallet made under the first key signs throughout.
func TestShamirRewrap(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mk := filepath.Join(t.TempDir(), "master.key")
	custody.GenerateMasterKeyFile(mk)
	priv, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	var out bytes.Buffer
	if err := run(ctx, []string{"init", "--org-name", "A", "--user-name", "u", "--api-public-key", pub, "--data-dir", dir, "--master-key-file", mk}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var created map[string]string
	json.Unmarshal(out.Bytes(), &created)
	a, stop := serveDir(t, dir, mk, created["organizationId"], priv)
	w := a.submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": []any{map[string]any{
			"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}},
	)
	addr := w["createWalletResult"].(map[string]any)["addresses"].([]any)[0].(string)
	stop()
	signUnsealed := func(shares ...string) {
		t.Helper()
		z, stop := startSealed(t, dir)
		defer stop()
		for _, s := range shares {
			if _, err := unsealWith(t, z.APIURL(), s); err != nil {
				t.Fatal(err)
			}
		}
		a.url = z.APIURL()
		a.submit(
			"sign_raw_payload",
			"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
			map[string]any{"signWith": addr, "payload": strings.Repeat("cd", 32),
				"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
		)
	}
	rewrap := func(in string, args ...string) []string {
		t.Helper()
		old := shareInput
		shareInput = strings.NewReader(in)
		defer func() { shareInput = old }()
		var out bytes.Buffer
		if err := run(ctx, append([]string{"keyring", "rewrap", "--data-dir", dir}, args...), &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		return sharesIn(out.String())
	}
	if err := run(ctx, []string{"keyring", "rewrap", "--data-dir", dir, "--master-key-file", mk, "--new-seal", "shamir"}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "needs --new-key-shares N and --new-key-threshold K") {
		t.Fatalf("rewrap to shamir without a split: %v", err)
	}
	first := rewrap(
		"",
		"--master-key-file",
		mk,
		"--new-seal",
		"shamir",
		"--new-key-shares",
		"3",
		"--new-key-threshold",
		"2",
	)
	if len(first) != 3 {
		t.Fatalf("shares after rewrap: %v", first)
	}
	if err := run(ctx, []string{"keys", "--data-dir", dir, "--master-key-file", mk}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "split into 3 shares") {
		t.Fatalf("the old master key file after rewrap: %v", err)
	}
	signUnsealed(first[0], first[2])

	second := rewrap(
		first[1]+"\n"+first[2]+"\n",
		"--seal",
		"shamir",
		"--new-seal",
		"shamir",
		"--new-key-shares",
		"2",
		"--new-key-threshold",
		"2",
	)
	z, stopZ := startSealed(t, dir)
	if _, err := unsealWith(t, z.APIURL(), first[0]); err == nil || !strings.Contains(err.Error(), "another split") {
		t.Fatalf("an old share after re-splitting: %v", err)
	}
	stopZ()
	signUnsealed(second...)

	mk2 := filepath.Join(t.TempDir(), "new.key")
	rewrap(second[0]+"\n"+second[1]+"\n", "--seal", "shamir", "--new-seal", "file", "--new-master-key-file", mk2)
	if err := run(ctx, []string{"keys", "--data-dir", dir, "--master-key-file", mk2}, io.Discard, io.Discard); err != nil {
		t.Fatalf("the file deployment after rewrap from shamir: %v", err)
	}
}
