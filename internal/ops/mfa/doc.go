// Package mfa holds users' MFA policies: per user, ordered, each a condition in the policy
// language (the same `activity`, `wallet`, `eth`, ... keywords as policy conditions) and an
// ordered list of authentication steps. When one of the initiator's policies matches an
// activity (the first in order), the engine holds the activity as
// ACTIVITY_STATUS_AUTHENTICATORS_NEEDED until the initiator has approved it with a credential
// of each step's method (see activity.MFARequirement); get_mfa_status shows the progress.
//
// A stamp proves API_KEY (an API key), PASSKEY (a WebAuthn assertion) or SESSION (a session key,
// identified by its session profile). EMAIL_OTP, SMS_OTP and OAUTH are proven by attested stamps,
// which Latchkey does not accept yet: a policy requiring them is refused with a 400 rather than
// stored as one no one could satisfy. A condition that fails to evaluate counts as matching
// (MFA fails closed).
package mfa
