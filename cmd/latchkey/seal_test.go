package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/server"
)

// signsAcrossRestart opens the deployment cfg names (its seal gives the master key), creates a
// wallet, closes it, opens it again and signs with the wallet: each start's seal gave the same
// master key.
func signsAcrossRestart(t *testing.T, cfg server.Config, org, priv string) {
	t.Helper()
	cfg.MustExist, cfg.Log = true, slog.New(slog.DiscardHandler)
	open := func() (*api, func()) {
		s, err := server.Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := httptest.NewServer(s.API.Handler())
		return &api{t: t, url: h.URL, org: org, priv: priv}, func() { h.Close(); s.Close() }
	}
	a, stop := open()
	w := a.submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": []any{map[string]any{
			"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}},
	)
	addr := w["createWalletResult"].(map[string]any)["addresses"].([]any)[0].(string)
	stop()
	b, stop2 := open()
	sig := b.submit(
		"sign_raw_payload",
		"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
		map[string]any{"signWith": addr, "payload": strings.Repeat("cd", 32),
			"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
	)
	stop2()
	if r := sig["signRawPayloadResult"].(map[string]any)["r"]; r == nil || r == "" {
		t.Fatalf("signature: %v", sig)
	}
}

// initSealed runs latchkey init with args (a wrapping seal's flags, --data-dir dir), checks that
// no master key file was written in dir, and returns init's output (the organization's, user's
// and API key's IDs).
func initSealed(t *testing.T, args []string, dir string) map[string]string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"init"}, args...), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var created map[string]string
	if err := json.Unmarshal(out.Bytes(), &created); err != nil {
		t.Fatalf("init's output: %v: %s", err, out.Bytes())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), "master") {
			t.Fatalf("a master key file in the data directory: %s", e.Name())
		}
	}
	return created
}
