// Package activity is the activity engine: the registry of operations, and the way every submit
// and query request travels once its stamp is verified and its caller resolved.
//
// A submit request:
//
//	type accepted by the path (every version the swagger lists)
//	timestampMs inside [now-1h, now+5min]
//	fingerprint = "sha256:" + hex(SHA-256(raw body)); an activity already holding it is returned as is
//	parameters decoded into the version's typed intent and validated (400 naming the field)
//	authorize(caller, activity)  -> denied: 403, recorded as a FAILED activity
//	store.Update { handler(intent) -> result; save COMPLETED activity }   (one transaction)
//	handler error: its writes are undone, a FAILED activity with `failure` is saved, the error returned
//
// Activities complete synchronously: the SDKs that do not poll (@turnkey/viem, @turnkey/solana)
// need COMPLETED in the submit response. The stored activity JSON is exactly what the API returns
// (canApprove/canReject false once terminal), so reading one back costs no re-encoding.
//
// A query request: the caller's own organization or a parent reading a sub-organization, then the
// handler's read. Queries record nothing.
//
// Handlers are typed (typed.go): an Operation's Execute, Prepare, SelfUser, PolicyEnv and Redact
// are made by adapters (On, Versions, OnAny, User, Env, Redactor) whose type parameter is the
// handler's own intent type, and Registry.Submit panics at start-up when an activity type version
// of the path decodes to a type no handler accepts. Query handlers are typed on their path's
// request the same way (Query). No handler type-asserts the intent it is given.
//
// The engine never sees key material: handlers call into custody for that.
package activity
