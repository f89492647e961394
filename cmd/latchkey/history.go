package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/chain/rpc"
	"github.com/latchkey/latchkey/internal/ops/chaindata"
)

const historyUsage = `usage: latchkey history backfill --caip2 eip155:N --address 0x… --from-block N --to-block M
                        --chain-rpc CAIP2=URL [store flags]

Indexes one wallet account address's transactions over a block range the chain follower did not
read (before the account existed in Latchkey, or before the follower first ran), so that
list_eth_transaction_history shows them. One run reads at most 10000 blocks; each block costs two
RPC calls plus one receipt per transaction of the address. Blocks already indexed are rewritten
with the same items.`

// cmdHistory runs the transaction history's operator commands (backfill).
func cmdHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "backfill" {
		fmt.Fprintln(stderr, historyUsage)
		return usageError{"history: give backfill"}
	}
	fs := flag.NewFlagSet("history backfill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	caip2 := fs.String("caip2", "", "the eip155 network, e.g. eip155:1 (required)")
	addr := fs.String("address", "", "the wallet account address (required)")
	fromBlock := fs.String("from-block", "", "the first block to read (required)")
	toBlock := fs.String("to-block", "", "the last block to read (required; at most 10000 blocks after --from-block)")
	var chainRPC listFlag
	fs.Var(
		&chainRPC,
		"chain-rpc",
		"CAIP2=URL chain providers, as serve takes them (keep API keys in LATCHKEY_CHAIN_RPC)",
	)
	assetsFile := fs.String("assets-file", "", "the asset list file serve uses (token symbols and decimals)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *caip2 == "" || *addr == "" || *fromBlock == "" || *toBlock == "" {
		return usageError{"--caip2, --address, --from-block and --to-block are required"}
	}
	from, err := strconv.ParseUint(*fromBlock, 10, 64)
	if err != nil {
		return usageError{"--from-block: want a block number, got " + strconv.Quote(*fromBlock)}
	}
	to, err := strconv.ParseUint(*toBlock, 10, 64)
	if err != nil {
		return usageError{"--to-block: want a block number, got " + strconv.Quote(*toBlock)}
	}
	if to >= from && to-from >= chaindata.MaxBackfillBlocks {
		return usageError{fmt.Sprintf("blocks %d..%d are %d blocks; one backfill reads at most %d (run several ranges)",
			from, to, to-from+1, chaindata.MaxBackfillBlocks)}
	}
	urls, err := chaindata.ParseProviders(chainRPC)
	if err != nil {
		return usageError{err.Error()}
	}
	network := chaindata.Canonical(*caip2)
	providers := map[string]*rpc.Client{}
	if u, ok := urls[network]; ok {
		providers[network] = &rpc.Client{Network: network, URL: u, HTTP: &http.Client{Timeout: 30 * time.Second}}
	}
	catalog, err := chaindata.LoadCatalog(*assetsFile)
	if err != nil {
		return err
	}
	s, err := sf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	d := chaindata.NewDeps(providers, catalog, 0)
	d.Store = s.Store
	items, err := d.Backfill(ctx, network, *addr, from, to, nil)
	if err != nil {
		return err
	}
	audit(ctx, s.Store, stderr, "history backfilled", "", map[string]string{"caip2": network, "address": *addr,
		"fromBlock": *fromBlock, "toBlock": *toBlock})
	return writeJSON(stdout, map[string]any{"caip2": network, "address": *addr, "fromBlock": from, "toBlock": to,
		"itemsWritten": items})
}
