// Package directory is the organization model as stored: organizations and their parent/child
// tree, users, API keys, authenticators (passkeys), OAuth providers and user tags, with the
// secondary keys that find them (a public key, a credential id, an e-mail address), and the
// resolution of a verified credential to the user calling.
//
// Records are JSON documents in the store (kind "organization", "user", "api_key",
// "authenticator", "user_tag"). Each record kind has a Load, a Save that writes its lookup keys,
// and a ToWire that renders the swagger shape. Nothing here is secret: API keys and passkeys are
// public halves only.
//
// Organization tree: a top-level organization has no parent; a sub-organization's record is
// owned (store OrgID) by its parent. A sub-organization cannot have sub-organizations.
package directory
