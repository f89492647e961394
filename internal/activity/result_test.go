package activity

import "testing"

func TestResultMember(t *testing.T) {
	for _, tc := range []struct{ intent, fallback, want string }{
		{"createSubOrganizationIntentV8", "x", "createSubOrganizationResultV8"},
		{"createSubOrganizationIntentV7", "x", "createSubOrganizationResultV7"},
		{"createSubOrganizationIntent", "x", "createSubOrganizationResult"},
		{"createPolicyIntentV3", "x", "createPolicyResult"},
		{"createUsersIntentV4", "x", "createUsersResult"},
		{"initOtpIntentV3", "x", "initOtpResultV2"},
		{"createReadWriteSessionIntentV2", "x", "createReadWriteSessionResultV2"},
		{"createReadWriteSessionIntent", "x", "createReadWriteSessionResult"},
		{"approveActivityIntent", "", ""},
	} {
		if got := resultMember(tc.intent, tc.fallback); got != tc.want {
			t.Errorf("resultMember(%q) = %q, want %q", tc.intent, got, tc.want)
		}
	}
}
