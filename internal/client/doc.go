// Package client is Latchkey's command-line client: the commands keygen, request, export
// decrypt, unseal and seal, which talk to a running server (or its auth proxy) over HTTP.
//
// # What it owns
//
//   - The key directory: API key pairs in <name>.json files (mode 0600, the directory 0700),
//     made by keygen; a key may also be read from a file path, including serve --dev's
//     dev-credentials.json.
//   - Stamped requests: request compacts the JSON body, adds timestampMs and organizationId when
//     absent, stamps it with the key as the Turnkey SDKs do and prints the answer; with --proxy
//     it sends an unstamped request to an auth proxy instead.
//   - Opening export bundles (export decrypt) with a key of the key directory, checking the
//     server's signer key (given, or read from /.well-known/latchkey.json).
//   - The seal commands of a --seal shamir server: unseal gives it one share (read without echo
//     from a terminal, or a line of stdin) and prints the progress; seal is a stamped request
//     that seals it again.
//
// # What it must never do
//
//   - Print or log a private key: keygen --json prints the public part only, and the decrypted
//     bytes of an export are zeroed once formatted for printing.
//   - Open the store: it is a client of a running server, like any SDK.
//
// The program (cmd/latchkey) parses the command name and hands each command its arguments
// through Commands, with its own flag parsing (flags from the environment too).
package client
