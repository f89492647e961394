// Package softhsmtest makes SoftHSM2 tokens for tests: a token directory and configuration of
// the test's own (SOFTHSM2_CONF), initialized by softhsm2-util. A test that needs one is skipped,
// saying why, where SoftHSM2 is not installed.
package softhsmtest
