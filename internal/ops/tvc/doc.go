// Package tvc keeps an organization's TVC (Turnkey Verifiable Compute) apps and deployments as
// managed, policy-governed records. Latchkey runs no enclave and no cluster: a TVC record here is
// the operator-visible statement of what would run, who must approve it and which deployment an
// app points its traffic at, with the same activity trail, policies and consensus as every other
// activity. Nothing is pulled, booted, attested or served.
//
// Records (all owned by one organization; delete_sub_organization removes them):
//
//   - tvc_operator: a named public key that may approve manifests or hold a quorum-key share.
//     Made by create_tvc_app's newOperators, or by create_tvc_operator with its keys held by
//     Latchkey as two P-256 accounts of a wallet (path/0 encrypts, path/1 signs; approvals are
//     sign_raw_payload of the manifest with HASH_FUNCTION_SHA256). Never changed afterwards.
//   - tvc_operator_set: a named set of operators and a threshold (1..len(operators)). An app
//     names two: the manifest set (who approves deployments) and the share set (who hold shares
//     of the app's quorum key). Sets may be shared by apps (manifestSetId / shareSetId).
//   - tvc_app: name (unique in the organization), quorum public key, the two sets, egress and
//     debug-mode flags fixed at creation, and the live-deployment pointer.
//   - tvc_deployment: one deployment of an app: the QOS version, the replica count, the
//     operator approvals of its manifest and whether it is deleted.
//   - tvc_deployment_spec: what the deployment was created with, under its id, never changed:
//     the pivot container spec and the manifest Latchkey derives from it (a JSON document, see
//     Manifest). Kept apart so that what reads a deployment's state (get_app_status, approvals,
//     delete, restore) does not read up to 1 MiB of pivot arguments twice over; a deployment
//     created before holds its spec itself (Deployment.SpecApart false).
//
// A deployment's life:
//
//	create_tvc_deployment ──> pending approval ──(approvals >= manifest set threshold)──> approved
//	approved ──set_tvc_app_live_deployment──> live (the app's liveDeploymentId)
//	pending/approved (not live) ──delete_tvc_deployment──> deleted (delete: true) ──restore_tvc_deployment──> as before
//	any ──delete_tvc_app_and_deployments──> gone, with its app (and the app's operator sets and
//	                                          operators that nothing else uses)
//
// Rules: a deployment belongs to exactly one app of the same organization; only a deployment
// whose manifest has at least the manifest set's threshold of valid approvals, and that is not
// deleted, can be set live; the live deployment cannot be deleted (set another live deployment
// first, or delete the whole app); deleted deployments take no approvals. Each approval is an
// ECDSA P-256 signature, by a member of the deployment's manifest set, over SHA-256 of the
// manifest bytes that get_tvc_deployment returns (manifest.manifest, base64 of the JSON), checked
// when it is submitted; an operator approves a manifest at most once.
//
// get_app_status reports the record state, not a cluster: every deployment's readyReplicas is 0
// because Latchkey runs nothing, desiredReplicas is the requested replica count (0 once deleted),
// and targetedDeploymentId is the live deployment ("" when none). What truly needs an enclave or
// a cluster (debug logs, image validation, provisioning details, quorum-key shares) is answered
// "not supported" by the server's compatibility table, not by this package.
package tvc
