// Package login is what every login activity ends with (otp_login, oauth_login, stamp_login,
// …): the client's session public key is registered as an API key of the user that expires
// with the session (invalidateExisting first removes the user's earlier login keys), and a
// session JWT signed by the notarizer key is returned (docs/wire.md §4.1).
package login
