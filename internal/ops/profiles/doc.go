// Package profiles holds session profiles (create_session_profile, get_session_profile,
// get_session_profiles) and invitations (create_invitations, delete_invitation).
//
// A session profile names a scope — an expression of the policy language, compiled when it is
// written — and a default lifetime. A session bound to a profile (its API key carries the
// profile id) may only do what the scope allows: the engine evaluates the scope on every
// activity such a session submits, before policies, and refuses what it does not allow.
//
// An invitation records who is invited to the organization with which tags and access type;
// Latchkey does not yet deliver invitations by e-mail or accept them.
package profiles
