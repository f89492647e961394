package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
)

// twoServersOnSQLite opens two servers over one SQLite data directory (as serve and an operator
// command do), for the cross-process tests that also run without PostgreSQL.
func twoServersOnSQLite(t *testing.T) (a, b *harness) {
	t.Helper()
	dir := t.TempDir()
	mk := filepath.Join(dir, "mk")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	var hs []*harness
	for range 2 {
		s, err := Open(context.Background(), Config{DataDir: dir, MasterKeyFile: mk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{t: t, s: s, now: time.Now().UTC()}
		srv := httptest.NewServer(s.API.Handler())
		t.Cleanup(func() { srv.Close(); s.Close() })
		h.url = srv.URL
		hs = append(hs, h)
	}
	return hs[0], hs[1]
}

// A new master key, given while two servers run: the keyring is rewrapped in one transaction,
// the data keys and every sealed value stay, and the other server carries on: it rotates the
// data key and opens values sealed under the new version after fetching the new master key from
// its (replaced) file. A start with the old key is refused, naming both keys' IDs.
func TestRewrapMasterKeyWhileServing(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(*testing.T) (*harness, *harness)
	}{{"SQLite", twoServersOnSQLite}, {"PostgreSQL", twoProcesses}} {
		t.Run(c.name, func(t *testing.T) { testRewrapWhileServing(t, c.open) })
	}
}

func testRewrapWhileServing(t *testing.T, open func(*testing.T) (*harness, *harness)) {
	ctx := context.Background()
	a, b := open(t)
	root, created := a.rootOrg("Acme")
	viaB := b.client(created.OrganizationID, root.priv)
	wallet := func(c *client, name string) string {
		r := c.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": name, "accounts": []any{map[string]any{
			"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}})
		mustOK(t, r)
		return r.str("activity", "result", "createWalletResult", "addresses", "0")
	}
	sign := func(c *client, addr string) {
		t.Helper()
		mustOK(t, c.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": addr, "payload": strings.Repeat("ab", 32),
			"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}))
	}
	before := wallet(root, "before")
	oldID := a.s.Keyring.MasterID()
	before1, err := a.s.KeyringStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}

	mk := a.s.cfg.MasterKeyFile
	next := filepath.Join(t.TempDir(), "next.key")
	res, err := a.s.RewrapMasterKey(ctx, RewrapTarget{MasterKeyFile: next})
	if err != nil {
		t.Fatal(err)
	}
	if res.OldMasterKey != oldID || res.NewMasterKey == oldID || res.NewMasterKey != a.s.Keyring.MasterID() {
		t.Fatalf("rewrap: %+v (old %s)", res, oldID)
	}
	after, err := a.s.KeyringStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Versions) != 1 || after.Versions[0].Sealed != before1.Versions[0].Sealed || after.Versions[0].Sealed == 0 {
		t.Fatalf("the sealed values changed: before %+v, after %+v", before1, after)
	}
	sign(root, before)
	sign(viaB, before) // b still holds the data keys

	// The operator puts the new key where the servers read it.
	if err := os.Rename(next, mk); err != nil {
		t.Fatal(err)
	}
	v, err := b.s.Keyring.Rotate(ctx, b.s.Store)
	if err != nil || v != 2 {
		t.Fatalf("rotate on the other server after the rewrap: %d %v", v, err)
	}
	if b.s.Keyring.MasterID() != res.NewMasterKey {
		t.Fatalf("the other server holds master key %s, want %s", b.s.Keyring.MasterID(), res.NewMasterKey)
	}
	// A wallet sealed by b under version 2 signs through a, which reloads the keyring.
	made := wallet(viaB, "after")
	sign(root, made)
	st, err := a.s.KeyringStatus(ctx)
	if err != nil || st.ActiveVersion != 2 || len(st.Versions) != 2 || st.Versions[1].Sealed == 0 {
		t.Fatalf("status after rotation: %+v %v", st, err)
	}

	// A start with the old key is refused, naming the key the keyring wants.
	old := filepath.Join(t.TempDir(), "old.key")
	if _, err := custody.GenerateMasterKeyFile(old); err != nil {
		t.Fatal(err)
	}
	cfg := a.s.cfg
	cfg.MasterKeyFile = old
	if _, err := Open(ctx, cfg); !errors.Is(err, custody.ErrWrongMasterKey) || !strings.Contains(err.Error(), res.NewMasterKey) {
		t.Fatalf("start with another master key: %v", err)
	}
	// Refusals leave the deployment as it was.
	for _, c := range []struct {
		to   RewrapTarget
		want string
	}{
		{RewrapTarget{}, "--new-master-key-file is required"},
		{RewrapTarget{MasterKeyFile: mk}, "exists"},
		{RewrapTarget{Seal: "hsm"}, `--seal "hsm"`},
		{RewrapTarget{Seal: custody.SealTransit, MasterKeyFile: next}, "is for a file seal"},
		{RewrapTarget{Seal: custody.SealTransit}, "--transit-addr"},
	} {
		if _, err := a.s.RewrapMasterKey(ctx, c.to); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.to, err, c.want)
		}
	}
	if a.s.Keyring.MasterID() != res.NewMasterKey {
		t.Fatal("a refused rewrap changed the master key")
	}
}
