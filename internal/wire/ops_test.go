package wire

import (
	"bufio"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// appendixRow is one line of testdata/result_keys.txt.
type appendixRow struct {
	path, typ, resultKey, also string
}

func readAppendix(t *testing.T) []appendixRow {
	t.Helper()
	f, err := os.Open("testdata/result_keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []appendixRow
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			t.Fatalf("result_keys.txt: want 4 tab-separated columns: %q", line)
		}
		rows = append(rows, appendixRow{cols[0], "ACTIVITY_TYPE_" + cols[1], cols[2], cols[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func versionTypes(op *Op) []string {
	var types []string
	for _, v := range op.Versions {
		types = append(types, v.Type)
	}
	return types
}

// The swagger and sdk-server disagree on one type spelling: the swagger's
// request enum lists ACTIVITY_TYPE_ETH_UNDELEGATE_7702 (what core sends),
// sdk-server 8.2.1 sends ACTIVITY_TYPE_ETH_UNDELEGATE7702. Both are accepted;
// the swagger's stays Versions[0].
var currentTypeDiffersFromAppendix = map[string]string{
	"eth_undelegate_7702": "ACTIVITY_TYPE_ETH_UNDELEGATE_7702",
}

func TestSubmitOpsMatchAppendixA(t *testing.T) {
	rows := readAppendix(t)
	if len(rows) != 107 {
		t.Fatalf("result_keys.txt has %d rows, want 107", len(rows))
	}
	seen := map[string]bool{}
	for _, row := range rows {
		t.Run(row.path, func(t *testing.T) {
			seen[row.path] = true
			op, ok := Lookup(Submit, row.path)
			if !ok {
				t.Fatalf("no submit op %q", row.path)
			}
			wantResult := row.resultKey
			if wantResult == "-" {
				wantResult = ""
			}
			if op.ResultMember != wantResult {
				t.Errorf("ResultMember = %q, want %q", op.ResultMember, wantResult)
			}
			types := versionTypes(op)
			wantCurrent := row.typ
			if swagger, ok := currentTypeDiffersFromAppendix[row.path]; ok {
				wantCurrent = swagger
				if !slices.Contains(types, row.typ) {
					t.Errorf("sdk-server's type %s not among Versions %v", row.typ, types)
				}
			}
			if types[0] != wantCurrent {
				t.Errorf("Versions[0].Type = %s, want %s", types[0], wantCurrent)
			}
			if row.also != "-" && !slices.Contains(types, "ACTIVITY_TYPE_"+row.also) {
				t.Errorf("core's type ACTIVITY_TYPE_%s not among Versions %v", row.also, types)
			}
		})
	}
	for _, op := range Ops {
		if op.Kind == Submit && !op.Superset && !seen[op.Path] {
			t.Errorf("submit op %s is missing from result_keys.txt", op.Path)
		}
	}
}

func TestOpCounts(t *testing.T) {
	count := map[OpKind]map[bool]int{Submit: {}, Query: {}, Other: {}}
	var superset []string
	for _, op := range Ops {
		count[op.Kind][op.Superset]++
		if op.Superset {
			superset = append(superset, op.Route)
		}
	}
	tests := []struct {
		kind     OpKind
		superset bool
		want     int
	}{
		{Submit, false, 107},
		{Query, false, 65},
		{Other, false, 1}, // /tkhq/api/v1/noop-codegen-anchor
		// 7 from the superset swagger + delete_secrets and upsert_gas_usage_config (newer.go)
		{Submit, true, 9},
		{Query, true, 2},
		{Other, true, 2},
	}
	for _, tt := range tests {
		if got := count[tt.kind][tt.superset]; got != tt.want {
			t.Errorf("%s ops (superset %v) = %d, want %d", tt.kind, tt.superset, got, tt.want)
		}
	}
	// spec/SOURCES.md lists the paths only the http superset has (and newer.go's).
	wantSuperset := []string{
		"/public/v1/query/get_organization",
		"/public/v1/query/get_tvc_deployment_provisioning_details",
		"/public/v1/submit/create_api_only_users",
		"/public/v1/submit/create_tvc_operator",
		"/public/v1/submit/create_tvc_quorum_key",
		"/public/v1/submit/delete_secrets",
		"/public/v1/submit/eth_send_raw_transaction",
		"/public/v1/submit/init_import_secrets",
		"/public/v1/submit/post_tvc_quorum_key_share",
		"/public/v1/submit/re_encrypt_tvc_quorum_key_share",
		"/public/v1/submit/upsert_gas_usage_config",
		"/tkhq/api/v1/refresh_feature_flags",
		"/tkhq/api/v1/test_rate_limits",
	}
	slices.Sort(superset)
	if !slices.Equal(superset, wantSuperset) {
		t.Errorf("superset routes = %v, want %v", superset, wantSuperset)
	}
	if len(ActivityTypes) != 162 {
		t.Errorf("len(ActivityTypes) = %d, want 162", len(ActivityTypes))
	}
}

func TestOpsSortedAndUnique(t *testing.T) {
	for i := 1; i < len(Ops); i++ {
		a, b := Ops[i-1], Ops[i]
		if a.Kind > b.Kind || a.Kind == b.Kind && a.Path >= b.Path {
			t.Errorf(
				"Ops not sorted by Kind then Path, or duplicated: %s/%s before %s/%s",
				a.Kind,
				a.Path,
				b.Kind,
				b.Path,
			)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		kind OpKind
		path string
		ok   bool
	}{
		{Submit, "create_users", true},
		{Query, "get_activity", true},
		{Query, "create_users", false},
		{Submit, "get_activity", false},
		{Other, "noop-codegen-anchor", true},
		{Submit, "no_such_op", false},
	}
	for _, tt := range tests {
		op, ok := Lookup(tt.kind, tt.path)
		if ok != tt.ok {
			t.Errorf("Lookup(%s, %q) ok = %v, want %v", tt.kind, tt.path, ok, tt.ok)
			continue
		}
		if ok && (op.Path != tt.path || op.Kind != tt.kind) {
			t.Errorf("Lookup(%s, %q) = %s/%s", tt.kind, tt.path, op.Kind, op.Path)
		}
	}
}

// jsonMembers maps the JSON names of a struct type's fields to their types.
func jsonMembers(typ reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		m[name] = f.Type
	}
	return m
}

// Every version's intent member exists in Intent and holds the type
// NewIntent returns; the result member exists in Result; the request's
// parameters are the current version's intent.
func TestSubmitVersionsConsistent(t *testing.T) {
	intents := jsonMembers(reflect.TypeFor[Intent]())
	results := jsonMembers(reflect.TypeFor[Result]())
	for _, op := range Ops {
		if op.Kind != Submit {
			if len(op.Versions) > 0 || op.ResultMember != "" {
				t.Errorf("%s: a %s op has versions or a result member", op.Path, op.Kind)
			}
			continue
		}
		if len(op.Versions) == 0 || op.NewRequest == nil || op.NewResponse == nil {
			t.Errorf("%s: missing versions, NewRequest or NewResponse", op.Path)
			continue
		}
		// Operations newer than the swagger have no place in its Intent, Result or type enum.
		newer := slices.ContainsFunc(newerOps, func(n Op) bool { return n.Path == op.Path })
		seen := map[string]bool{}
		for _, v := range op.Versions {
			if newer {
				continue
			}
			if seen[v.Type] {
				t.Errorf("%s: type %s listed twice", op.Path, v.Type)
			}
			seen[v.Type] = true
			if listed := slices.Contains(ActivityTypes, v.Type); listed == v.Unlisted {
				t.Errorf("%s: %s Unlisted = %v but in ActivityTypes = %v", op.Path, v.Type, v.Unlisted, listed)
			}
			member, ok := intents[v.IntentMember]
			if !ok {
				t.Errorf("%s: Intent has no member %s", op.Path, v.IntentMember)
				continue
			}
			if got := reflect.TypeOf(v.NewIntent()); got != member {
				t.Errorf("%s: %s NewIntent() is %v, Intent.%s is %v", op.Path, v.Type, got, v.IntentMember, member)
			}
		}
		if op.ResultMember != "" && !newer {
			if _, ok := results[op.ResultMember]; !ok {
				t.Errorf("%s: Result has no member %s", op.Path, op.ResultMember)
			}
		}
		req := reflect.TypeOf(op.NewRequest()).Elem()
		params, ok := req.FieldByName("Parameters")
		if !ok {
			t.Errorf("%s: request %v has no Parameters", op.Path, req)
		} else if want := reflect.TypeOf(op.Versions[0].NewIntent()).Elem(); params.Type != want {
			t.Errorf("%s: request parameters are %v, Versions[0] intent is %v", op.Path, params.Type, want)
		}
		if _, ok := op.NewResponse().(*ActivityResponse); !ok {
			t.Errorf("%s: response is %T, want *ActivityResponse", op.Path, op.NewResponse())
		}
	}
}

func TestOlderVersions(t *testing.T) {
	tests := []struct {
		path string
		want []string
	}{
		{"create_users", []string{"CREATE_USERS_V4", "CREATE_USERS_V3", "CREATE_USERS_V2", "CREATE_USERS"}},
		{"init_otp", []string{"INIT_OTP_V3", "INIT_OTP_V2", "INIT_OTP"}},
		{"create_policy", []string{"CREATE_POLICY_V3", "CREATE_POLICY_V2", "CREATE_POLICY"}},
		{"sign_raw_payloads", []string{"SIGN_RAW_PAYLOADS"}},
		{"oauth2_authenticate", []string{"OAUTH2_AUTHENTICATE"}},
		{"eth_send_transaction", []string{"ETH_SEND_TRANSACTION_V2", "ETH_SEND_TRANSACTION"}},
		{"sol_send_transaction", []string{"SOL_SEND_TRANSACTION_V2", "SOL_SEND_TRANSACTION"}},
		{"eth_undelegate_7702", []string{"ETH_UNDELEGATE_7702", "ETH_UNDELEGATE7702"}},
	}
	for _, tt := range tests {
		op, ok := Lookup(Submit, tt.path)
		if !ok {
			t.Errorf("no submit op %s", tt.path)
			continue
		}
		var want []string
		for _, w := range tt.want {
			want = append(want, "ACTIVITY_TYPE_"+w)
		}
		if got := versionTypes(op); !slices.Equal(got, want) {
			t.Errorf("%s versions = %v, want %v", tt.path, got, want)
		}
	}
}

func TestQueryAndOtherOps(t *testing.T) {
	for _, op := range Ops {
		if op.Kind == Submit {
			continue
		}
		if op.NewResponse == nil {
			t.Errorf("%s: no NewResponse", op.Route)
		}
		if op.NewRequest == nil && op.Path != "noop-codegen-anchor" {
			t.Errorf("%s: no NewRequest", op.Route)
		}
	}
	op, _ := Lookup(Query, "get_activity")
	if _, ok := op.NewRequest().(*GetActivityRequest); !ok {
		t.Errorf("get_activity request is %T", op.NewRequest())
	}
	if _, ok := op.NewResponse().(*ActivityResponse); !ok {
		t.Errorf("get_activity response is %T", op.NewResponse())
	}
}

func TestOpVersion(t *testing.T) {
	op, _ := Lookup(Submit, "eth_send_transaction")
	v, ok := op.Version("ACTIVITY_TYPE_ETH_SEND_TRANSACTION")
	if !ok || v.IntentMember != "ethSendTransactionIntent" {
		t.Errorf("Version(V1) = %+v, %v", v, ok)
	}
	if _, ok := op.Version("ACTIVITY_TYPE_CREATE_USERS_V4"); ok {
		t.Error("eth_send_transaction accepts ACTIVITY_TYPE_CREATE_USERS_V4")
	}
}

func TestLookupType(t *testing.T) {
	tests := []struct {
		typ, path, member string
	}{
		{"ACTIVITY_TYPE_CREATE_USERS_V2", "create_users", "createUsersIntentV2"},
		{"ACTIVITY_TYPE_ETH_UNDELEGATE7702", "eth_undelegate_7702", "ethUndelegate7702Intent"},
		{"ACTIVITY_TYPE_CREATE_API_ONLY_USERS", "create_api_only_users", "createApiOnlyUsersIntent"},
		{"ACTIVITY_TYPE_CREATE_ORGANIZATION", "", ""},
	}
	for _, tt := range tests {
		op, v, ok := LookupType(tt.typ)
		if ok != (tt.path != "") {
			t.Errorf("LookupType(%s) ok = %v", tt.typ, ok)
			continue
		}
		if ok && (op.Path != tt.path || v.IntentMember != tt.member) {
			t.Errorf("LookupType(%s) = %s, %s; want %s, %s", tt.typ, op.Path, v.IntentMember, tt.path, tt.member)
		}
	}
}

// Every listed activity type belongs to at most one path.
func TestTypesBelongToOnePath(t *testing.T) {
	owner := map[string]string{}
	for _, op := range Ops {
		for _, v := range op.Versions {
			if other, ok := owner[v.Type]; ok {
				t.Errorf("%s is accepted by %s and %s", v.Type, other, op.Path)
			}
			owner[v.Type] = op.Path
		}
	}
}
