// Package chaindata reads balances from and broadcasts transactions to the chains, through the
// JSON-RPC providers the operator configures (--chain-rpc CAIP2=URL; internal/chain/rpc). Latchkey
// talks to no chain on its own.
//
//   - list_supported_assets: the asset list (assets.go: each network's native coin and major
//     stablecoins, with CAIP-19 ids; an operator file extends or replaces it).
//   - get_wallet_address_balances: the non-zero balances of one of the organization's wallet
//     account addresses (private key addresses are refused, as the spec says): the native coin
//     (eth_getBalance, getBalance) and the listed tokens (ERC-20 balanceOf through eth_call; SPL
//     token accounts through getTokenAccountsByOwner), in atomic units as strings. Balances are
//     kept a few seconds per (network, address) and concurrent readers share one fetch, so a
//     burst of calls is one set of RPC calls. display.crypto is the amount in whole units;
//     display.usd is set only with an operator price file (--prices-file), as Latchkey fetches no
//     prices. Both are for display only. The query is a beta that needs access: an operator grants it per organization
//     (`latchkey access grant --feature wallet-balances`); a parent's grant covers its
//     sub-organizations.
//   - eth_send_raw_transaction: a signed transaction for the network of its chain id, sent with
//     eth_sendRawTransaction; get_send_transaction_status follows it to INCLUDED or FAILED with
//     eth_getTransactionReceipt. get_nonces reads eth_getTransactionCount (pending).
//   - sol_send_transaction: signed with the named accounts (wallets.Deps.SignSolana), sent with
//     sendTransaction, followed with getSignatureStatuses. With sponsor: true (solsponsor.go) the
//     deployment's fee payer becomes the first signer (solana.Sponsor), every signature is
//     verified before the send is recorded, the most it can cost is reserved against the
//     organization's gas usage, and the follower settles it from getTransaction.
//   - list_sol_transaction_history (solhistory.go): read from the node on demand, one
//     getSignaturesForAddress and at most 25 getTransaction a page, cursors MAC-bound to the
//     organization, network and address.
//
// A send is recorded in the activity's transaction and broadcast once it commits (never inside
// it: broadcasting is network I/O, and a transaction may roll back or run again); a node's
// refusal is kept on the record, and get_send_transaction_status reports the send FAILED with the
// node's words. eth_send_transaction (ethsend.go) builds, signs and sends one unsponsored
// EIP-1559 transaction, asking the provider for what the caller left out before the transaction.
// Sponsored sends and batches of calls (ethsend_batch.go) go through the gas-station delegate
// (docs/gas-station.md): the account signs a BatchExecution (and, on its first send, an EIP-7702
// authorization) in the activity; a sponsored send is queued for the paymaster (paymaster.go),
// which signs its own transaction in a store transaction that allocates its nonce and broadcasts
// after commit; eth_undelegate_7702 (undelegate.go) is queued the same way.
//
// list_eth_transaction_history (history.go, historylist.go) answers from an index the balance
// follower's block walk keeps for every wallet account address on the eip155 networks with a
// provider (native transfers, ERC-20 Transfer logs of any token, Latchkey's own sends marked;
// CONFIRMED then FINALIZED, reorged items dropped), from the time the account exists;
// Backfill (historybackfill.go, `latchkey history backfill`) adds a bounded older range.
package chaindata
