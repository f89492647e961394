package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// subOrgV8 is a valid create_sub_organization body (sdk-server's shape);
// edit replaces one substring to make a variant of it.
const subOrgV8 = `{
  "type": "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8",
  "timestampMs": "1746736509954",
  "organizationId": "org-1",
  "parameters": {
    "subOrganizationName": "sub",
    "rootQuorumThreshold": 1,
    "rootUsers": [{
      "userName": "root",
      "userEmail": "root@example.com",
      "apiKeys": [{"apiKeyName": "k", "publicKey": "02ab", "curveType": "API_KEY_CURVE_P256"}],
      "authenticators": [],
      "oauthProviders": []
    }],
    "wallet": {
      "walletName": "w",
      "accounts": [{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}]
    }
  }
}`

func edit(t *testing.T, body, old, new string) string {
	t.Helper()
	if !strings.Contains(body, old) {
		t.Fatalf("body has no %q", old)
	}
	return strings.Replace(body, old, new, 1)
}

func TestValidateCreateSubOrganization(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr string // "" for valid
	}{
		{"valid", subOrgV8, ""},
		{"unknown members are tolerated",
			edit(t, subOrgV8, `"subOrganizationName"`, `"somethingNew": {"x": 1}, "subOrganizationName"`), ""},
		{"empty required list is present",
			edit(
				t,
				subOrgV8,
				`"apiKeys": [{"apiKeyName": "k", "publicKey": "02ab", "curveType": "API_KEY_CURVE_P256"}]`,
				`"apiKeys": []`,
			), ""},
		{"optional struct absent",
			edit(t, subOrgV8, `"rootQuorumThreshold": 1,`, `"rootQuorumThreshold": 1, "clientSignature": null,`), ""},
		{"missing nested userName",
			edit(t, subOrgV8, `"userName": "root",`, ``), "parameters.rootUsers[0].userName is required"},
		{"empty nested userName",
			edit(t, subOrgV8, `"userName": "root"`, `"userName": ""`), "parameters.rootUsers[0].userName is required"},
		{"invalid curveType",
			edit(
				t,
				subOrgV8,
				`API_KEY_CURVE_P256`,
				`FOO`,
			), `invalid value "FOO" for parameters.rootUsers[0].apiKeys[0].curveType`},
		{"missing required enum",
			edit(
				t,
				subOrgV8,
				`, "curveType": "API_KEY_CURVE_P256"`,
				``,
			), "parameters.rootUsers[0].apiKeys[0].curveType is required"},
		{"absent required list",
			edit(t, subOrgV8, `"authenticators": [],`, ``), "parameters.rootUsers[0].authenticators is required"},
		{"null required list",
			edit(
				t,
				subOrgV8,
				`"authenticators": []`,
				`"authenticators": null`,
			), "parameters.rootUsers[0].authenticators is required"},
		{"invalid enum in optional struct",
			edit(
				t,
				subOrgV8,
				`CURVE_SECP256K1`,
				`CURVE_NOPE`,
			), `invalid value "CURVE_NOPE" for parameters.wallet.accounts[0].curve`},
		{"wrong inline enum type",
			edit(t, subOrgV8, `_V8"`, `_V7"`), `invalid value "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7" for type`},
		{"missing organizationId",
			edit(t, subOrgV8, `"organizationId": "org-1",`, ``), "organizationId is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req CreateSubOrganizationRequest
			if err := json.Unmarshal([]byte(tt.body), &req); err != nil {
				t.Fatal(err)
			}
			err := req.Validate("")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("Validate = %v, want %s", err, tt.wantErr)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate returned %T, want *FieldError", err)
			}
		})
	}
}

// A submit handler decodes the envelope, picks the version and validates
// the parameters with the intent type under "parameters".
func TestValidateIntentByVersion(t *testing.T) {
	body := edit(t, subOrgV8, `"userName": "root",`, ``)
	var env SubmitEnvelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		t.Fatal(err)
	}
	if err := env.Validate(""); err != nil {
		t.Fatal(err)
	}
	op, _ := Lookup(Submit, "create_sub_organization")
	v, ok := op.Version(env.Type)
	if !ok {
		t.Fatalf("no version %s", env.Type)
	}
	intent := v.NewIntent()
	if err := json.Unmarshal(env.Parameters, intent); err != nil {
		t.Fatal(err)
	}
	var fe *FieldError
	if err := intent.Validate("parameters"); !errors.As(err, &fe) || fe.Field != "parameters.rootUsers[0].userName" ||
		fe.Reason != ReasonRequired {
		t.Fatalf("Validate = %v, want parameters.rootUsers[0].userName required", err)
	}
}

func TestSubmitEnvelopeValidate(t *testing.T) {
	tests := []struct {
		body, want string
	}{
		{`{"type":"T","timestampMs":"1","organizationId":"o","parameters":{}}`, ""},
		{`{"timestampMs":"1","organizationId":"o","parameters":{}}`, "type is required"},
		{`{"type":"T","organizationId":"o","parameters":{}}`, "timestampMs is required"},
		{`{"type":"T","timestampMs":"1","parameters":{}}`, "organizationId is required"},
		{`{"type":"T","timestampMs":"1","organizationId":"o"}`, "parameters is required"},
		{`{"type":"T","timestampMs":"1","organizationId":"o","parameters":null}`, "parameters is required"},
	}
	for _, tt := range tests {
		var env SubmitEnvelope
		if err := json.Unmarshal([]byte(tt.body), &env); err != nil {
			t.Fatal(err)
		}
		err := env.Validate("")
		if got := errString(err); got != tt.want {
			t.Errorf("%s: Validate = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFieldError(t *testing.T) {
	tests := []struct {
		err  *FieldError
		want string
	}{
		{Required(FieldPath("parameters", "userName")), "parameters.userName is required"},
		{Required(FieldPath("", "userName")), "userName is required"},
		{InvalidValue(IndexPath(FieldPath("p", "list"), 2), `a"b`), `invalid value "a\"b" for p.list[2]`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestEnumValid(t *testing.T) {
	if !ActivityType("ACTIVITY_TYPE_CREATE_USERS_V4").Valid() {
		t.Error("CREATE_USERS_V4 not valid")
	}
	for _, bad := range []string{"", "ACTIVITY_TYPE_NOPE", "activity_type_create_users_v4"} {
		if ActivityType(bad).Valid() {
			t.Errorf("%q is valid", bad)
		}
	}
	if len(ActivityStatusValues) != 7 {
		t.Errorf("ActivityStatusValues has %d values, want 7", len(ActivityStatusValues))
	}
}

func TestActivityJSONMembers(t *testing.T) {
	threshold := int32(1)
	a := Activity{
		Id:             "act-1",
		OrganizationId: "org-1",
		Status:         "ACTIVITY_STATUS_COMPLETED",
		Type:           "ACTIVITY_TYPE_CREATE_WALLET",
		Intent: Intent{
			CreateWalletIntent: &CreateWalletIntent{
				WalletName:     "w",
				Accounts:       []WalletAccountParams{},
				MnemonicLength: &threshold,
			},
		},
		Result: Result{
			CreateWalletResult: &CreateWalletResult{WalletId: "wal-1", Addresses: []string{"0xabc"}},
		},
		Votes:       []Vote{},
		Fingerprint: "sha256:00",
		CanApprove:  true,
		CanReject:   false,
		CreatedAt:   Externaldatav1Timestamp{Seconds: "1746736509", Nanos: "954000000"},
		UpdatedAt:   Externaldatav1Timestamp{Seconds: "1746736510", Nanos: "0"},
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"act-1","organizationId":"org-1","status":"ACTIVITY_STATUS_COMPLETED","type":"ACTIVITY_TYPE_CREATE_WALLET",` +
		`"intent":{"createWalletIntent":{"walletName":"w","accounts":[],"mnemonicLength":1}},` +
		`"result":{"createWalletResult":{"walletId":"wal-1","addresses":["0xabc"]}},` +
		`"votes":[],"fingerprint":"sha256:00","canApprove":true,"canReject":false,` +
		`"createdAt":{"seconds":"1746736509","nanos":"954000000"},"updatedAt":{"seconds":"1746736510","nanos":"0"}}`
	if string(b) != want {
		t.Errorf("Marshal =\n%s\nwant\n%s", b, want)
	}
	var back Activity
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, a) {
		t.Errorf("round trip changed the activity:\n%+v\n%+v", back, a)
	}
	if err := back.Validate("activity"); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestRpcStatusDetails(t *testing.T) {
	body := `{"code":7,"message":"denied","details":[{"@type":"type.googleapis.com/errors.v1.TurnkeyErrorDetail","turnkeyErrorCode":"X"}]}`
	var s RpcStatus
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != body {
		t.Errorf("round trip = %s", b)
	}
}

// Every swagger definition has a Go type in types_gen.go.
func TestEveryDefinitionHasAType(t *testing.T) {
	declared := map[string]bool{}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "types_gen.go", nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
			for _, s := range gd.Specs {
				declared[s.(*ast.TypeSpec).Name.Name] = true
			}
		}
	}
	if len(declared) != 742 {
		t.Errorf("types_gen.go declares %d types, want 742 (723 canonical + 19 superset-only)", len(declared))
	}
	for _, file := range []string{"public_api.swagger.json", "public_api.http-superset.swagger.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "spec", file))
		if err != nil {
			t.Fatal(err)
		}
		var spec struct {
			Definitions map[string]json.RawMessage `json:"definitions"`
		}
		if err := json.Unmarshal(b, &spec); err != nil {
			t.Fatal(err)
		}
		for def := range spec.Definitions {
			name := strings.TrimPrefix(def, "v1")
			name = strings.ToUpper(name[:1]) + name[1:]
			if !declared[name] {
				t.Errorf("%s: definition %s has no type %s", file, def, name)
			}
		}
	}
}

// The checked-in generated files are what the generator writes now.
func TestGeneratedFilesUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out := t.TempDir()
	cmd := exec.Command(goTool, "run", "./gen", "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./gen: %v\n%s", err, b)
	}
	for _, name := range []string{"types_gen.go", "ops_gen.go", filepath.Join("proxy", "types_gen.go")} {
		want, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate in internal/wire", name)
		}
	}
}
