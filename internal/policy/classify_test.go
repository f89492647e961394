package policy

import (
	"encoding/json"
	"os"
	"testing"
)

func TestClassify(t *testing.T) {
	tests := []struct{ typ, kind, resource, action string }{
		{"ACTIVITY_TYPE_SIGN_TRANSACTION_V2", "SIGN_TRANSACTION", "PRIVATE_KEY", "SIGN"},
		{"ACTIVITY_TYPE_SIGN_TRANSACTION", "SIGN_TRANSACTION", "PRIVATE_KEY", "SIGN"},
		{"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", "CREATE_SUB_ORGANIZATION", "ORGANIZATION", "CREATE"},
		{"ACTIVITY_TYPE_CREATE_POLICY_V3", "CREATE_POLICY", "POLICY", "CREATE"},
		{"ACTIVITY_TYPE_VERIFY_OTP_V2", "VERIFY_OTP", "OTP", "VERIFY"},
		{"ACTIVITY_TYPE_INIT_OTP", "INIT_OTP", "OTP", "CREATE"},
		{"ACTIVITY_TYPE_OTP_LOGIN_V2", "OTP_LOGIN", "AUTH", "CREATE"},
		{"ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG", "CREATE_PRIVATE_KEY_TAG", "PRIVATE_KEY", "CREATE"},
		{"ACTIVITY_TYPE_UPDATE_USER_TAG", "UPDATE_USER_TAG", "USER", "UPDATE"},
		{"ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS_V2", "CREATE_OAUTH_PROVIDERS", "CREDENTIAL", "CREATE"},
		{"ACTIVITY_TYPE_EXPORT_WALLET_ACCOUNT", "EXPORT_WALLET_ACCOUNT", "WALLET", "EXPORT"},
		{"ACTIVITY_TYPE_INIT_IMPORT_PRIVATE_KEY", "INIT_IMPORT_PRIVATE_KEY", "PRIVATE_KEY", "IMPORT"},
		{
			"ACTIVITY_TYPE_RE_ENCRYPT_TVC_QUORUM_KEY_SHARE",
			"RE_ENCRYPT_TVC_QUORUM_KEY_SHARE",
			"TVC_QUORUM_KEY",
			"ENCRYPT",
		},
		{"ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2", "ETH_SEND_TRANSACTION", "PRIVATE_KEY", "SIGN"},
		{"ACTIVITY_TYPE_OAUTH2_AUTHENTICATE", "OAUTH2_AUTHENTICATE", "AUTH", "CREATE"},
		{"ACTIVITY_TYPE_CREATE_MFA_POLICY", "CREATE_MFA_POLICY", "MFA_POLICY", "CREATE"},
		// Root-quorum-only activities have no kind.
		{"ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", "", "", ""},
		{"ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE", "", "", ""},
		{"ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE", "", "", ""},
		{"ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME", "", "", ""},
		// Unknown or malformed types.
		{"ACTIVITY_TYPE_FROBNICATE_V2", "FROBNICATE", "", ""},
		{"SIGN_TRANSACTION", "", "", ""},
		{"ACTIVITY_TYPE_", "", "", ""},
		{"", "", "", ""},
		// _V followed by non-digits is part of the name.
		{"ACTIVITY_TYPE_X_VERIFY", "X_VERIFY", "", ""},
	}
	for _, tt := range tests {
		k, r, a := Classify(tt.typ)
		if k != tt.kind || r != tt.resource || a != tt.action {
			t.Errorf("Classify(%q) = %q %q %q, want %q %q %q", tt.typ, k, r, a, tt.kind, tt.resource, tt.action)
		}
	}
	for typ, want := range map[string]bool{
		"ACTIVITY_TYPE_UPDATE_ROOT_QUORUM":       true,
		"ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME": true,
		"ACTIVITY_TYPE_CREATE_WALLET":            false,
		"":                                       false,
	} {
		if got := RootQuorumOnly(typ); got != want {
			t.Errorf("RootQuorumOnly(%q) = %v", typ, got)
		}
	}
}

var validResources = map[string]bool{
	"AUTH": true, "AUTH_PROXY": true, "CONFIG": true, "CREDENTIAL": true, "FIAT_TRANSACTION": true,
	"INVITATION": true, "MFA_POLICY": true, "ON_RAMP_CREDENTIALS": true, "ORGANIZATION": true, "OTP": true,
	"PAYMENT_METHOD": true, "POLICY": true, "PRIVATE_KEY": true, "RECOVERY": true, "SESSION_PROFILE": true,
	"SMART_CONTRACT_INTERFACE": true, "SPONSORSHIP": true, "SUBSCRIPTION": true, "TVC_APP": true,
	"TVC_DEPLOYMENT": true, "TVC_OPERATOR": true, "TVC_QUORUM_KEY": true, "USER": true, "WALLET": true,
	"WEBHOOK_ENDPOINT": true,
}

var validActions = map[string]bool{
	"CREATE": true, "UPDATE": true, "DELETE": true, "SIGN": true, "EXPORT": true, "IMPORT": true,
	"VERIFY": true, "ENCRYPT": true,
}

// Every ACTIVITY_TYPE_* of the v1ActivityType enum in the repository's
// swagger is classified with a documented resource and action, except the
// root-quorum-only types and the consensus votes.
func TestClassifyCoversSwaggerEnum(t *testing.T) {
	raw, err := os.ReadFile("../../spec/public_api.swagger.json")
	if err != nil {
		t.Skipf("swagger not available: %v", err)
	}
	var doc struct {
		Definitions map[string]struct {
			Enum []string `json:"enum"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	types := doc.Definitions["v1ActivityType"].Enum
	if len(types) < 100 {
		t.Fatalf("v1ActivityType has %d values", len(types))
	}
	usedKinds := map[string]bool{}
	for _, typ := range types {
		kind, resource, action := Classify(typ)
		if RootQuorumOnly(typ) {
			if kind != "" || resource != "" || action != "" {
				t.Errorf("%s: root-quorum-only but classified %q %q %q", typ, kind, resource, action)
			}
			continue
		}
		usedKinds[kind] = true
		if kind == "APPROVE_ACTIVITY" || kind == "REJECT_ACTIVITY" {
			continue
		}
		if _, ok := kindTable[kind]; !ok {
			t.Errorf("%s: kind %s missing from kindTable", typ, kind)
			continue
		}
		if !validResources[resource] || !validActions[action] {
			t.Errorf("%s: invalid resource/action %q/%q", typ, resource, action)
		}
	}
	newer := map[string]bool{"DELETE_SECRETS": true} // @turnkey/http 6.6.0, newer than the swagger
	for kind := range kindTable {
		if !usedKinds[kind] && !newer[kind] {
			t.Errorf("kindTable has %s, which no swagger type uses", kind)
		}
	}
}

func TestActivityView(t *testing.T) {
	v := ActivityView("ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", Map{"hash_function": String("HASH_FUNCTION_NO_OP")})
	if Format(
		v,
	) != "{action: 'SIGN', kind: 'SIGN_RAW_PAYLOAD', params: {hash_function: 'HASH_FUNCTION_NO_OP'}, resource: 'PRIVATE_KEY', type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'}" {
		t.Errorf("ActivityView = %s", Format(v))
	}
	e, _ := Compile("activity.kind == 'UPDATE_ROOT_QUORUM'")
	if _, err := e.Eval(ValueEnv{"activity": ActivityView("ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", nil)}); err == nil {
		t.Error("root-quorum activities have no kind: want MissingField")
	}
	e, _ = Compile("activity.params.encoding == 'X'")
	if _, err := e.Eval(ValueEnv{"activity": ActivityView("ACTIVITY_TYPE_CREATE_WALLET", nil)}); err == nil {
		t.Error("unexposed params: want MissingField")
	}
}
