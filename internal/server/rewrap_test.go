package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/custody"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// twoServersOnSQLite opens two servers over one SQLite data directory (as serve and an operator
// command do), for the cross-process tests that also run without PostgreSQL.
func twoServersOnSQLite(t *testing.T) (a, b *servertest.Harness) {
	t.Helper()
	cfg := servertest.NewConfig(t)
	return servertest.Start(t, cfg), servertest.Start(t, cfg)
}

// A new master key, given while two servers run: the keyring is rewrapped in one transaction,
// the data keys and every sealed value stay, and the other server carries on: it rotates the
// data key and opens values sealed under the new version after fetching the new master key from
// its (replaced) file. A start with the old key is refused, naming both keys' IDs.
func TestRewrapMasterKeyWhileServing(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(*testing.T) (*servertest.Harness, *servertest.Harness)
	}{{"SQLite", twoServersOnSQLite}, {"PostgreSQL", twoProcesses}} {
		t.Run(c.name, func(t *testing.T) { testRewrapWhileServing(t, c.open) })
	}
}

func testRewrapWhileServing(t *testing.T, open func(*testing.T) (*servertest.Harness, *servertest.Harness)) {
	ctx := context.Background()
	a, b := open(t)
	root, created := a.RootOrg("Acme")
	viaB := b.Client(created.OrganizationID, root.Priv)
	wallet := func(c *servertest.Client, name string) string {
		r := c.Submit(
			"create_wallet",
			"ACTIVITY_TYPE_CREATE_WALLET",
			map[string]any{"walletName": name, "accounts": []any{map[string]any{
				"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}},
		)
		servertest.MustOK(t, r)
		return r.Str("activity", "result", "createWalletResult", "addresses", "0")
	}
	sign := func(c *servertest.Client, addr string) {
		t.Helper()
		servertest.MustOK(
			t,
			c.Submit(
				"sign_raw_payload",
				"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
				map[string]any{"signWith": addr, "payload": strings.Repeat("ab", 32),
					"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
			),
		)
	}
	before := wallet(root, "before")
	oldID := a.Server.Keyring.MasterID()
	before1, err := a.Server.KeyringStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}

	mk := a.Config.MasterKeyFile
	next := filepath.Join(t.TempDir(), "next.key")
	res, err := a.Server.RewrapMasterKey(ctx, server.RewrapTarget{MasterKeyFile: next})
	if err != nil {
		t.Fatal(err)
	}
	if res.OldMasterKey != oldID || res.NewMasterKey == oldID || res.NewMasterKey != a.Server.Keyring.MasterID() {
		t.Fatalf("rewrap: %+v (old %s)", res, oldID)
	}
	after, err := a.Server.KeyringStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Versions) != 1 || after.Versions[0].Sealed != before1.Versions[0].Sealed ||
		after.Versions[0].Sealed == 0 {
		t.Fatalf("the sealed values changed: before %+v, after %+v", before1, after)
	}
	sign(root, before)
	sign(viaB, before) // b still holds the data keys

	// The operator puts the new key where the servers read it.
	if err := os.Rename(next, mk); err != nil {
		t.Fatal(err)
	}
	v, err := b.Server.Keyring.Rotate(ctx, b.Server.Store)
	if err != nil || v != 2 {
		t.Fatalf("rotate on the other server after the rewrap: %d %v", v, err)
	}
	if b.Server.Keyring.MasterID() != res.NewMasterKey {
		t.Fatalf("the other server holds master key %s, want %s", b.Server.Keyring.MasterID(), res.NewMasterKey)
	}
	// A wallet sealed by b under version 2 signs through a, which reloads the keyring.
	made := wallet(viaB, "after")
	sign(root, made)
	st, err := a.Server.KeyringStatus(ctx)
	if err != nil || st.ActiveVersion != 2 || len(st.Versions) != 2 || st.Versions[1].Sealed == 0 {
		t.Fatalf("status after rotation: %+v %v", st, err)
	}

	// A start with the old key is refused, naming the key the keyring wants.
	old := filepath.Join(t.TempDir(), "old.key")
	if _, err := custody.GenerateMasterKeyFile(old); err != nil {
		t.Fatal(err)
	}
	cfg := a.Config
	cfg.MasterKeyFile = old
	if _, err := server.Open(ctx, cfg); !errors.Is(err, custody.ErrWrongMasterKey) ||
		!strings.Contains(err.Error(), res.NewMasterKey) {
		t.Fatalf("start with another master key: %v", err)
	}
	// Refusals leave the deployment as it was.
	for _, c := range []struct {
		to   server.RewrapTarget
		want string
	}{
		{server.RewrapTarget{}, "--new-master-key-file is required"},
		{server.RewrapTarget{MasterKeyFile: mk}, "exists"},
		{server.RewrapTarget{Seal: "hsm"}, `--seal "hsm"`},
		{server.RewrapTarget{Seal: custody.SealTransit, MasterKeyFile: next}, "is for a file seal"},
		{server.RewrapTarget{Seal: custody.SealTransit}, "--transit-addr"},
	} {
		if _, err := a.Server.RewrapMasterKey(ctx, c.to); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.to, err, c.want)
		}
	}
	if a.Server.Keyring.MasterID() != res.NewMasterKey {
		t.Fatal("a refused rewrap changed the master key")
	}
}
