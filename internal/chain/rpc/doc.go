// Package rpc is Latchkey's JSON-RPC 2.0 client for the chain nodes an operator configures
// (--chain-rpc CAIP2=URL): EVM nodes (eth_*) and Solana RPC nodes. Each call has a timeout and
// is retried with exponential backoff when the transport fails or the node answers 429 or 5xx;
// a JSON-RPC error from the node is returned at once. Every error names the network and never
// the URL (provider URLs often carry an API key).
package rpc
