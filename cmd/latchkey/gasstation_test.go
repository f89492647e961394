package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/stamp"
)

// gas-station show prints the sponsor keys' addresses, the same every time; a missing or
// unknown subcommand is a usage error.
func TestGasStationShow(t *testing.T) {
	dir := t.TempDir()
	mk := filepath.Join(dir, "mk")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LATCHKEY_DATA_DIR", dir)
	t.Setenv("LATCHKEY_MASTER_KEY_FILE", mk)
	_, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	ctx := context.Background()
	var out, errb bytes.Buffer
	if err := run(ctx, []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub}, &out,
		&errb); err != nil {
		t.Fatalf("init: %v\n%s", err, errb.String())
	}
	show := func() map[string]string {
		out.Reset()
		if err := run(ctx, []string{"gas-station", "show"}, &out, &errb); err != nil {
			t.Fatalf("gas-station show: %v\n%s", err, errb.String())
		}
		var got map[string]string
		if err := json.Unmarshal(out.Bytes(), &got); err != nil || len(got) != 2 {
			t.Fatalf("gas-station show printed %q", out.String())
		}
		return got
	}
	a := show()
	if !common.IsHexAddress(a["evmPaymaster"]) || common.HexToAddress(a["evmPaymaster"]).Hex() != a["evmPaymaster"] {
		t.Fatalf("evmPaymaster %q is not an EIP-55 address", a["evmPaymaster"])
	}
	if k, err := base58.Decode(a["solanaFeePayer"]); err != nil || len(k) != 32 {
		t.Fatalf("solanaFeePayer %q is not a Solana address", a["solanaFeePayer"])
	}
	if b := show(); b["evmPaymaster"] != a["evmPaymaster"] || b["solanaFeePayer"] != a["solanaFeePayer"] {
		t.Fatalf("the sponsor keys changed between two runs: %v, %v", a, b)
	}
	for _, args := range [][]string{{"gas-station"}, {"gas-station", "rotate"}} {
		if err := run(ctx, args, &out, &errb); !isUsageError(err) ||
			!strings.Contains(err.Error(), "gas-station show") {
			t.Errorf("%v: %v", args, err)
		}
	}
}
