// Package webhooks delivers activity events to the HTTP endpoints an organization subscribes.
//
// Endpoints are records of the organization (create/update/delete/list_webhook_endpoints).
// When an activity of an organization with endpoints reaches a new status, the engine's
// OnActivity (Enqueuer) writes one delivery per active endpoint into an outbox, in the same
// transaction as the activity: an event
// exists exactly when its activity does, and nothing is lost if the process stops. The
// Deliverer drains the outbox in the background, never in the request's path: it leases a
// delivery (so several processes over one database do not send it twice), POSTs it, deletes it
// on a 2xx, and otherwise retries with exponential backoff (1 s doubling to 10 min, 20 attempts).
//
// Every delivery is signed so the receiver can check it came from this Latchkey:
//
//	X-Latchkey-Delivery: <delivery id>          (the same on every retry: deduplicate on it)
//	X-Latchkey-Timestamp: <unix seconds>
//	X-Latchkey-Signature: <hex DER ECDSA P-256 signature over SHA-256(timestamp + "." + body)>
//
// verified with the server's webhook key (webhookPublicKey in /.well-known/latchkey.json). The
// body is {"type":"ACTIVITY_UPDATES","deliveryId","organizationId","timestampMs","data":{"activity":…}}.
package webhooks
