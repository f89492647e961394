// Package credentials holds the operations on a user's credentials: API keys (create_api_keys,
// delete_api_keys), passkeys (create_authenticators, delete_authenticators), read-write sessions
// (create_read_write_session: a new expiring API key whose private key leaves only as an HPKE
// credential bundle encrypted to the client's key), and the queries that read them.
//
// A user may manage their own credentials; root users may manage anyone's in their organization.
package credentials
