// Package clientaddr finds the address of the client behind a request: the connection's peer,
// or, when that peer is a trusted reverse proxy, the last address in X-Forwarded-For that is not
// itself a trusted proxy. IP allowlists (the activity API) and per-address rate limits (the auth
// proxy) judge this address.
package clientaddr
