package policy

import "strings"

// resourceAction is the policy-facing (resource, action) of an activity kind.
type resourceAction struct{ resource, action string }

// kindTable maps every activity kind of the v1ActivityType enum to its
// resource and action. Rows marked "inferred" are absent from language.mdx's
// "Activity types by resource and action" table and were chosen by analogy;
// all other rows come from that table (which lists one version of each kind;
// every version of a kind shares its row).
var kindTable = map[string]resourceAction{
	// ORGANIZATION
	"CREATE_SUB_ORGANIZATION": {"ORGANIZATION", "CREATE"},
	"DELETE_ORGANIZATION":     {"ORGANIZATION", "DELETE"},
	"DELETE_SUB_ORGANIZATION": {"ORGANIZATION", "DELETE"},
	"CREATE_ORGANIZATION":     {"ORGANIZATION", "CREATE"}, // inferred: like CREATE_SUB_ORGANIZATION

	// INVITATION
	"CREATE_INVITATIONS": {"INVITATION", "CREATE"},
	"DELETE_INVITATION":  {"INVITATION", "DELETE"},
	"ACCEPT_INVITATION":  {"INVITATION", "UPDATE"}, // inferred: accepting changes the invitation's state

	// POLICY
	"CREATE_POLICY":   {"POLICY", "CREATE"},
	"CREATE_POLICIES": {"POLICY", "CREATE"},
	"UPDATE_POLICY":   {"POLICY", "UPDATE"},
	"DELETE_POLICY":   {"POLICY", "DELETE"},
	"DELETE_POLICIES": {"POLICY", "DELETE"},

	// SMART_CONTRACT_INTERFACE
	"CREATE_SMART_CONTRACT_INTERFACE": {"SMART_CONTRACT_INTERFACE", "CREATE"},
	"DELETE_SMART_CONTRACT_INTERFACE": {"SMART_CONTRACT_INTERFACE", "DELETE"},

	// WALLET
	"CREATE_WALLET":              {"WALLET", "CREATE"},
	"CREATE_WALLET_ACCOUNTS":     {"WALLET", "CREATE"},
	"EXPORT_WALLET":              {"WALLET", "EXPORT"},
	"EXPORT_WALLET_ACCOUNT":      {"WALLET", "EXPORT"},
	"INIT_IMPORT_WALLET":         {"WALLET", "IMPORT"},
	"IMPORT_WALLET":              {"WALLET", "IMPORT"},
	"DELETE_WALLETS":             {"WALLET", "DELETE"},
	"UPDATE_WALLET":              {"WALLET", "UPDATE"},
	"DELETE_WALLET_ACCOUNTS":     {"WALLET", "DELETE"},
	"UPDATE_WALLET_ACCOUNT_NAME": {"WALLET", "UPDATE"}, // inferred: like UPDATE_WALLET

	// PRIVATE_KEY (all signing is PRIVATE_KEY/SIGN, wallet signing included)
	"CREATE_PRIVATE_KEYS":     {"PRIVATE_KEY", "CREATE"},
	"CREATE_PRIVATE_KEY_TAG":  {"PRIVATE_KEY", "CREATE"},
	"UPDATE_PRIVATE_KEY_TAG":  {"PRIVATE_KEY", "UPDATE"},
	"DISABLE_PRIVATE_KEY":     {"PRIVATE_KEY", "DELETE"},
	"DELETE_PRIVATE_KEY_TAGS": {"PRIVATE_KEY", "DELETE"},
	"DELETE_PRIVATE_KEYS":     {"PRIVATE_KEY", "DELETE"},
	"EXPORT_PRIVATE_KEY":      {"PRIVATE_KEY", "EXPORT"},
	"INIT_IMPORT_PRIVATE_KEY": {"PRIVATE_KEY", "IMPORT"},
	"IMPORT_PRIVATE_KEY":      {"PRIVATE_KEY", "IMPORT"},
	"SIGN_RAW_PAYLOAD":        {"PRIVATE_KEY", "SIGN"},
	"SIGN_RAW_PAYLOADS":       {"PRIVATE_KEY", "SIGN"},
	"SIGN_TRANSACTION":        {"PRIVATE_KEY", "SIGN"},
	"ETH_SEND_TRANSACTION":    {"PRIVATE_KEY", "SIGN"},
	"SOL_SEND_TRANSACTION":    {"PRIVATE_KEY", "SIGN"},
	// inferred: these sign with a wallet or key, and "all signing is PRIVATE_KEY/SIGN".
	"ETH_UNDELEGATE_7702":             {"PRIVATE_KEY", "SIGN"},
	"SPARK_SIGN_FROST":                {"PRIVATE_KEY", "SIGN"},
	"SPARK_PREPARE_TRANSFER":          {"PRIVATE_KEY", "SIGN"},
	"SPARK_CLAIM_TRANSFER":            {"PRIVATE_KEY", "SIGN"},
	"SPARK_PREPARE_LIGHTNING_RECEIVE": {"PRIVATE_KEY", "SIGN"},
	"EXECUTE_SWAP":                    {"PRIVATE_KEY", "SIGN"},
	"CREATE_SWAP_QUOTE": {
		"PRIVATE_KEY",
		"SIGN",
	}, // inferred: a quote is bound to signWith and starts a swap
	"CLAIM_SWAP_FEES":        {"PRIVATE_KEY", "SIGN"},
	"EARN_DEPLOY_WRAPPER":    {"PRIVATE_KEY", "SIGN"},
	"EARN_DEPOSIT":           {"PRIVATE_KEY", "SIGN"},
	"EARN_WITHDRAW":          {"PRIVATE_KEY", "SIGN"},
	"EARN_SET_WRAPPER_STATE": {"PRIVATE_KEY", "SIGN"},
	"CLAIM_EARN_FEES":        {"PRIVATE_KEY", "SIGN"},
	// inferred: secrets have no resource of their own; they are imported and
	// exported like keys.
	"INIT_IMPORT_SECRETS": {"PRIVATE_KEY", "IMPORT"},
	"IMPORT_SECRETS":      {"PRIVATE_KEY", "IMPORT"},
	"EXPORT_SECRETS":      {"PRIVATE_KEY", "EXPORT"},
	"DELETE_SECRETS":      {"PRIVATE_KEY", "DELETE"},

	// USER (user tags and every user update are USER)
	"CREATE_USERS":             {"USER", "CREATE"},
	"CREATE_USER_TAG":          {"USER", "CREATE"},
	"CREATE_API_ONLY_USERS":    {"USER", "CREATE"},
	"UPDATE_USER":              {"USER", "UPDATE"},
	"UPDATE_USER_NAME":         {"USER", "UPDATE"},
	"UPDATE_USER_EMAIL":        {"USER", "UPDATE"},
	"UPDATE_USER_PHONE_NUMBER": {"USER", "UPDATE"},
	"UPDATE_USER_TAG":          {"USER", "UPDATE"},
	"DELETE_USERS":             {"USER", "DELETE"},
	"DELETE_USER_TAGS":         {"USER", "DELETE"},

	// CREDENTIAL (API keys, authenticators, OAuth providers)
	"CREATE_API_KEYS":        {"CREDENTIAL", "CREATE"},
	"CREATE_AUTHENTICATORS":  {"CREDENTIAL", "CREATE"},
	"DELETE_API_KEYS":        {"CREDENTIAL", "DELETE"},
	"DELETE_AUTHENTICATORS":  {"CREDENTIAL", "DELETE"},
	"CREATE_OAUTH_PROVIDERS": {"CREDENTIAL", "CREATE"},
	"DELETE_OAUTH_PROVIDERS": {"CREDENTIAL", "DELETE"},

	// PAYMENT_METHOD, SUBSCRIPTION, CONFIG, RECOVERY
	"SET_PAYMENT_METHOD":       {"PAYMENT_METHOD", "UPDATE"},
	"DELETE_PAYMENT_METHOD":    {"PAYMENT_METHOD", "DELETE"},
	"ACTIVATE_BILLING_TIER":    {"SUBSCRIPTION", "CREATE"},
	"UPDATE_ALLOWED_ORIGINS":   {"CONFIG", "UPDATE"},
	"SET_IP_ALLOWLIST":         {"CONFIG", "UPDATE"}, // inferred: like UPDATE_ALLOWED_ORIGINS
	"REMOVE_IP_ALLOWLIST":      {"CONFIG", "DELETE"}, // inferred
	"UPSERT_SWAP_CONFIG":       {"CONFIG", "UPDATE"}, // inferred
	"INIT_USER_EMAIL_RECOVERY": {"RECOVERY", "CREATE"},
	"RECOVER_USER": {
		"RECOVERY",
		"UPDATE",
	}, // inferred: completes the recovery INIT_USER_EMAIL_RECOVERY created

	// AUTH (email/OTP/OAuth/stamp login, sessions, OAuth2 credentials)
	"EMAIL_AUTH":                {"AUTH", "CREATE"},
	"INIT_OTP_AUTH":             {"AUTH", "CREATE"},
	"OTP_AUTH":                  {"AUTH", "CREATE"},
	"OAUTH":                     {"AUTH", "CREATE"},
	"OAUTH_LOGIN":               {"AUTH", "CREATE"},
	"OTP_LOGIN":                 {"AUTH", "CREATE"},
	"STAMP_LOGIN":               {"AUTH", "CREATE"},
	"CREATE_READ_WRITE_SESSION": {"AUTH", "CREATE"},
	"CREATE_READ_ONLY_SESSION":  {"AUTH", "CREATE"}, // inferred: like CREATE_READ_WRITE_SESSION
	"CREATE_OAUTH2_CREDENTIAL":  {"AUTH", "CREATE"},
	"UPDATE_OAUTH2_CREDENTIAL":  {"AUTH", "UPDATE"},
	"DELETE_OAUTH2_CREDENTIAL":  {"AUTH", "DELETE"},
	"OAUTH2_AUTHENTICATE":       {"AUTH", "CREATE"},

	// OTP
	"INIT_OTP":   {"OTP", "CREATE"},
	"VERIFY_OTP": {"OTP", "VERIFY"},

	// AUTH_PROXY
	"ENABLE_AUTH_PROXY":        {"AUTH_PROXY", "CREATE"},
	"DISABLE_AUTH_PROXY":       {"AUTH_PROXY", "DELETE"},
	"UPDATE_AUTH_PROXY_CONFIG": {"AUTH_PROXY", "UPDATE"},

	// WEBHOOK_ENDPOINT
	"CREATE_WEBHOOK_ENDPOINT": {"WEBHOOK_ENDPOINT", "CREATE"},
	"UPDATE_WEBHOOK_ENDPOINT": {"WEBHOOK_ENDPOINT", "UPDATE"},
	"DELETE_WEBHOOK_ENDPOINT": {"WEBHOOK_ENDPOINT", "DELETE"},

	// TVC
	"CREATE_TVC_APP":                  {"TVC_APP", "CREATE"},
	"UPDATE_TVC_APP_LIVE_DEPLOYMENT":  {"TVC_APP", "UPDATE"},
	"DELETE_TVC_APP_AND_DEPLOYMENTS":  {"TVC_APP", "DELETE"},
	"CREATE_TVC_DEPLOYMENT":           {"TVC_DEPLOYMENT", "CREATE"},
	"CREATE_TVC_MANIFEST_APPROVALS":   {"TVC_DEPLOYMENT", "UPDATE"},
	"RESTORE_TVC_DEPLOYMENT":          {"TVC_DEPLOYMENT", "UPDATE"},
	"POST_TVC_QUORUM_KEY_SHARE":       {"TVC_DEPLOYMENT", "UPDATE"},
	"DELETE_TVC_DEPLOYMENT":           {"TVC_DEPLOYMENT", "DELETE"},
	"CREATE_TVC_OPERATOR":             {"TVC_OPERATOR", "CREATE"},
	"CREATE_TVC_QUORUM_KEY":           {"TVC_QUORUM_KEY", "CREATE"},
	"RE_ENCRYPT_TVC_QUORUM_KEY_SHARE": {"TVC_QUORUM_KEY", "ENCRYPT"},

	// inferred: the resource list names these resources but the table omits
	// their activities.
	"CREATE_MFA_POLICY":              {"MFA_POLICY", "CREATE"}, // also used by features/authentication/mfa examples
	"UPDATE_MFA_POLICY":              {"MFA_POLICY", "UPDATE"},
	"DELETE_MFA_POLICY":              {"MFA_POLICY", "DELETE"},
	"CREATE_SESSION_PROFILE":         {"SESSION_PROFILE", "CREATE"},
	"CREATE_FIAT_ON_RAMP_CREDENTIAL": {"ON_RAMP_CREDENTIALS", "CREATE"},
	"UPDATE_FIAT_ON_RAMP_CREDENTIAL": {"ON_RAMP_CREDENTIALS", "UPDATE"},
	"DELETE_FIAT_ON_RAMP_CREDENTIAL": {"ON_RAMP_CREDENTIALS", "DELETE"},
	"INIT_FIAT_ON_RAMP":              {"FIAT_TRANSACTION", "CREATE"},
	"UPSERT_GAS_USAGE_CONFIG":        {"SPONSORSHIP", "UPDATE"},
	"ETH_SEND_RAW_TRANSACTION": {
		"SPONSORSHIP",
		"CREATE",
	}, // inferred: broadcasts an already-signed transaction; nothing is signed

	// inferred: votes on another activity. The engine handles them (a user
	// named in the target's consensus may always vote); they have a kind but
	// no resource or action.
	"APPROVE_ACTIVITY": {"", ""},
	"REJECT_ACTIVITY":  {"", ""},
}

// rootQuorumOnly lists the activities governed by the root quorum alone
// (language.mdx, "Root quorum activities").
var rootQuorumOnly = map[string]bool{
	"UPDATE_ROOT_QUORUM":          true,
	"SET_ORGANIZATION_FEATURE":    true,
	"REMOVE_ORGANIZATION_FEATURE": true,
	"UPDATE_ORGANIZATION_NAME":    true,
}

// Kind returns the version-agnostic kind of an activity type: the type
// without its ACTIVITY_TYPE_ prefix and _Vn suffix. It does not consult the
// tables; Classify does.
func kindOf(activityType string) string {
	k, ok := strings.CutPrefix(activityType, "ACTIVITY_TYPE_")
	if !ok || k == "" {
		return ""
	}
	if i := strings.LastIndex(k, "_V"); i > 0 {
		digits := k[i+2:]
		allDigits := digits != ""
		for j := 0; j < len(digits); j++ {
			if digits[j] < '0' || digits[j] > '9' {
				allDigits = false
			}
		}
		if allDigits {
			k = k[:i]
		}
	}
	return k
}

// Classify returns the policy-facing view of an activity type: its kind (the
// type without ACTIVITY_TYPE_ and _Vn, e.g. SIGN_TRANSACTION), resource and
// action. Root-quorum-only activities have no kind, resource or action;
// unknown types get their kind but no resource or action.
func Classify(activityType string) (kind, resource, action string) {
	k := kindOf(activityType)
	if k == "" || rootQuorumOnly[k] {
		return "", "", ""
	}
	ra := kindTable[k]
	return k, ra.resource, ra.action
}

// RootQuorumOnly reports whether an activity type is decided by the root
// quorum alone, ignoring policies: UPDATE_ROOT_QUORUM,
// SET_ORGANIZATION_FEATURE, REMOVE_ORGANIZATION_FEATURE and
// UPDATE_ORGANIZATION_NAME.
func RootQuorumOnly(activityType string) bool { return rootQuorumOnly[kindOf(activityType)] }

// ActivityView returns the `activity` keyword's value for a request: type,
// kind, resource, action and the given params (a Map; nil means none are
// exposed, so reading any param is a MissingField error).
func ActivityView(activityType string, params Map) Map {
	kind, resource, action := Classify(activityType)
	if params == nil {
		params = Map{}
	}
	m := Map{"type": String(activityType), "params": params}
	// A root-quorum-only activity has no kind (language.mdx); absent fields
	// read as MissingField rather than as ''.
	if kind != "" {
		m["kind"] = String(kind)
	}
	if resource != "" {
		m["resource"] = String(resource)
	}
	if action != "" {
		m["action"] = String(action)
	}
	return m
}
