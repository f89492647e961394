// Package proxy holds the JSON shapes of Turnkey's Auth Proxy (/v1/*) as Go
// types, and the table of its operations, generated from
// spec/auth_proxy.swagger.json by internal/wire/gen. Shapes only: no
// behaviour. Do not edit types_gen.go by hand; run go generate in
// internal/wire.
package proxy
