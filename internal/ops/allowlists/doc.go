// Package allowlists holds the IP allowlist operations: set_ip_allowlist, remove_ip_allowlist and
// get_ip_allowlist, at the organization level (every request stamped by the organization's
// credentials) or for one API key (its public key). The allowlist lives on the organization or
// API key record, which caller resolution reads anyway, so enforcing it costs no extra read; the
// API layer checks the client address against it before the engine runs.
package allowlists
