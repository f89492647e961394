package main

import "strings"

// Turnkey's API is proto3 behind a JSON gateway: an empty string cannot be told from an absent
// one, so "required" in the swagger means "the client names it", not "non-empty", and Turnkey's
// own clients send "" for required members (create_policy notes, set_organization_feature value,
// update_user_email userEmail to remove the address). The generated Validate therefore refuses
// "" in a required string member only where an empty value can mean nothing, for the reason
// emptyRefused gives; every other required string reaches its handler, which decides what ""
// means. (Enum members are refused as not one of their values, whatever their name.)
func emptyRefused(member string) string {
	switch {
	case member == "id" || strings.HasSuffix(member, "Id"):
		return "an identifier"
	case member == "name" || strings.HasSuffix(member, "Name"):
		return "a name"
	case member == "publicKey" || strings.HasSuffix(member, "PublicKey"):
		return "a public key"
	case member == "signWith":
		return "names the key that signs"
	case member == "unsignedTransaction" || member == "signedTransaction" || member == "payload":
		return "the data to sign or send"
	case member == "timestampMs" || member == "type":
		return "the activity envelope"
	case member == "fingerprint":
		return "names the activity voted on"
	case member == "label":
		return "a name"
	case member == "path":
		return "a derivation path"
	case member == "signature":
		return "a signature"
	case member == "nonce":
		return "binds the token to the client's key"
	}
	return ""
}
