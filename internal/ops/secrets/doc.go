// Package secrets holds an organization's secrets: arbitrary bytes (an API token, a seed in
// some other format) that clients import encrypted to a one-time server target
// (init_import_secrets, import_secrets), that the server keeps sealed like private keys, and
// that clients take back out encrypted to their own key (export_secrets). The plaintext never
// leaves internal/custody. list_secrets shows only names and static properties.
//
// The transport suite is TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1: init returns
// ServerTargetMsgV1 envelopes (the signed import-bundle envelope of docs/wire.md §3.2), an
// import carries a ClientSendMsg ({encappedPublic, ciphertext}, what @turnkey/crypto's
// encrypt*ToBundle helpers produce) and an export answers a ServerSendMsgV1 (an export bundle).
package secrets
