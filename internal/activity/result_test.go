package activity

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/wire"
)

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

func TestSplitJoinEqualsMarshal(t *testing.T) {
	a := &Wire{ID: "a1", OrganizationID: "o1", Status: StatusCompleted, Type: "ACTIVITY_TYPE_CREATE_USER_TAG",
		Intent: json.RawMessage(`{"createUserTagIntent":{"userTagName":"x","userIds":[]}}`), Fingerprint: "sha256:00",
		Votes: []wire.Vote{{Id: "v", UserId: "u", Message: "{\"a\":\"<b>\"}"}}, CreatedAt: Timestamp(time.Unix(5, 6)), UpdatedAt: Timestamp(time.Unix(5, 6))}
	head, tail, err := a.split()
	if err != nil {
		t.Fatal(err)
	}
	result := map[string]any{"userTagId": "t", "userIds": []string{}}
	got, err := joinResult(head, "createUserTagResult", result, tail)
	if err != nil {
		t.Fatal(err)
	}
	a.Result, _ = json.Marshal(map[string]any{"createUserTagResult": result})
	want, _ := json.Marshal(a)
	if string(got) != string(want) {
		t.Fatalf("split/join:\n%s\nmarshal:\n%s", got, want)
	}
}
