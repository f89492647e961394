package main

import "testing"

func TestNames(t *testing.T) {
	tests := []struct {
		fn       func(string) string
		in, want string
	}{
		{typeName, "v1CreateUserTagIntent", "CreateUserTagIntent"},
		{typeName, "rpcStatus", "RpcStatus"},
		{typeName, "externaldatav1Timestamp", "Externaldatav1Timestamp"},
		{fieldName, "userIds", "UserIds"},
		{fieldName, "@type", "Type"},
		{fieldName, "organizationId", "OrganizationId"},
		{intentMember, "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7", "createSubOrganizationIntentV7"},
		{intentMember, "ACTIVITY_TYPE_CREATE_USERS", "createUsersIntent"},
		{intentMember, "ACTIVITY_TYPE_OAUTH2_AUTHENTICATE", "oauth2AuthenticateIntent"},
		{intentMember, "ACTIVITY_TYPE_ETH_UNDELEGATE_7702", "ethUndelegate7702Intent"},
	}
	for _, tt := range tests {
		if got := tt.fn(tt.in); got != tt.want {
			t.Errorf("%s -> %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestSplitType(t *testing.T) {
	tests := []struct {
		in   string
		base string
		n    int
	}{
		{"ACTIVITY_TYPE_CREATE_USERS_V4", "CREATE_USERS", 4},
		{"ACTIVITY_TYPE_CREATE_USERS", "CREATE_USERS", 1},
		{"ACTIVITY_TYPE_ETH_UNDELEGATE_7702", "ETH_UNDELEGATE_7702", 1},
	}
	for _, tt := range tests {
		if base, n := splitType(tt.in); base != tt.base || n != tt.n {
			t.Errorf("splitType(%s) = %s, %d; want %s, %d", tt.in, base, n, tt.base, tt.n)
		}
	}
}
