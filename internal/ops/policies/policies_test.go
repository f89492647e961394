package policies_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/ops/policies"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/wire"
)

// harness is an activity engine over SQLite in a temp dir serving this package's operations,
// with one organization (a root user and a plain member) and a clock tests move.
type harness struct {
	t      *testing.T
	st     store.Store
	eng    *activity.Engine
	limits directory.Limits
	org    *directory.Organization
	root   *directory.Caller
	member *directory.Caller

	mu  sync.Mutex
	now time.Time
}

func newHarness(t *testing.T, limits directory.Limits) *harness {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "latchkey.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, st: st, limits: limits, now: time.Now().UTC().Truncate(time.Millisecond)}
	reg := activity.NewRegistry()
	policies.Register(
		reg,
		policies.Deps{Env: func(x *activity.Exec) directory.Env { return directory.Env{Now: x.Now, Limits: h.limits} }},
	)
	h.eng = activity.NewEngine(
		&activity.Services{Store: st, Now: h.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil))},
		reg,
	)
	h.org, h.root, h.member = h.organization("Acme")
	return h
}

// organization creates an organization whose root quorum is one user, plus a non-root user, and
// returns callers for both.
func (h *harness) organization(name string) (*directory.Organization, *directory.Caller, *directory.Caller) {
	h.t.Helper()
	ctx := context.Background()
	now := h.clock()
	env := directory.Env{Now: now, Limits: directory.DefaultLimits}
	o := &directory.Organization{
		ID:        id.New(),
		Name:      name,
		Features:  []directory.Feature{},
		CreatedAt: now,
		UpdatedAt: now,
	}
	var root, member *directory.User
	err := h.st.Update(ctx, func(tx store.Tx) error {
		var err error
		if root, err = directory.CreateUser(ctx, tx, env, o.ID, directory.UserSpec{Name: "root", Field: "user"}); err != nil {
			return err
		}
		if member, err = directory.CreateUser(ctx, tx, env, o.ID, directory.UserSpec{Name: "member", Field: "user"}); err != nil {
			return err
		}
		o.RootQuorum = directory.Quorum{UserIDs: []string{root.ID}, Threshold: 1}
		return directory.SaveOrganization(ctx, tx, o)
	})
	if err != nil {
		h.t.Fatal(err)
	}
	caller := func(u *directory.User) *directory.Caller {
		return &directory.Caller{
			User:           u,
			Org:            o,
			Target:         o,
			CredentialID:   id.New(),
			CredentialType: directory.CredentialAPIKeyP256,
			PublicKey: "02" + strings.Repeat(
				"ab",
				32,
			),
			Scheme:    "SIGNATURE_SCHEME_TK_API_P256",
			Signature: "3006020101020101",
		}
	}
	return o, caller(root), caller(member)
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

// tick moves the clock a millisecond so that no two requests share a body (and a fingerprint).
func (h *harness) tick() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(time.Millisecond)
	return h.now
}

// submit runs a submit request and returns the result member's JSON.
func (h *harness) submit(c *directory.Caller, path, typ string, params any) (json.RawMessage, error) {
	h.t.Helper()
	p, err := json.Marshal(params)
	if err != nil {
		h.t.Fatal(err)
	}
	raw := []byte(
		fmt.Sprintf(
			`{"parameters":%s,"organizationId":%q,"timestampMs":"%d","type":%q}`,
			p,
			c.Target.ID,
			h.tick().UnixMilli(),
			typ,
		),
	)
	env, err := activity.ParseEnvelope(raw)
	if err != nil {
		return nil, err
	}
	data, err := h.eng.Submit(context.Background(), activity.SubmitRequest{Path: path, Raw: raw, Env: env, Caller: c})
	if err != nil {
		return nil, err
	}
	var a struct {
		Status string                     `json:"status"`
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		h.t.Fatal(err)
	}
	if a.Status != activity.StatusCompleted || len(a.Result) != 1 {
		h.t.Fatalf("%s: activity %s", path, data)
	}
	for _, v := range a.Result {
		return v, nil
	}
	return nil, nil
}

// mustSubmit runs a submit request that must succeed and decodes its result into out.
func (h *harness) mustSubmit(c *directory.Caller, path, typ string, params, out any) {
	h.t.Helper()
	res, err := h.submit(c, path, typ, params)
	if err != nil {
		h.t.Fatalf("%s: %v", path, err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			h.t.Fatalf("%s: decoding %s: %v", path, res, err)
		}
	}
}

// query runs a query as c and decodes the response into out.
func (h *harness) query(c *directory.Caller, path string, params map[string]any, out any) error {
	h.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["organizationId"] = c.Target.ID
	raw, _ := json.Marshal(params)
	v, err := h.eng.Query(context.Background(), activity.QueryRequest{Path: path, Raw: raw, Caller: c})
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		h.t.Fatalf("%s: decoding %s: %v", path, b, err)
	}
	return nil
}

func (h *harness) mustQuery(c *directory.Caller, path string, params map[string]any, out any) {
	h.t.Helper()
	if err := h.query(c, path, params, out); err != nil {
		h.t.Fatalf("%s: %v", path, err)
	}
}

func (h *harness) listPolicies() []wire.Policy {
	h.t.Helper()
	var out wire.GetPoliciesResponse
	h.mustQuery(h.root, "list_policies", nil, &out)
	if out.Policies == nil {
		h.t.Fatal("list_policies: policies is null")
	}
	return out.Policies
}

// wantErr checks err is an API error with the HTTP status whose message contains substr.
func wantErr(t *testing.T, err error, status int, substr string) {
	t.Helper()
	if err == nil {
		t.Fatalf("succeeded, want HTTP %d %q", status, substr)
	}
	e := apierr.From(err)
	if e.Code.HTTPStatus() != status || !strings.Contains(e.Message, substr) {
		t.Fatalf("got HTTP %d %q, want HTTP %d containing %q", e.Code.HTTPStatus(), e.Message, status, substr)
	}
}

func v3(name, effect, condition, consensus string) map[string]any {
	p := map[string]any{"policyName": name, "effect": effect, "notes": "notes on " + name}
	if condition != "" {
		p["condition"] = condition
	}
	if consensus != "" {
		p["consensus"] = consensus
	}
	return p
}

const (
	typeCreateV3 = "ACTIVITY_TYPE_CREATE_POLICY_V3"
	typeUpdateV2 = "ACTIVITY_TYPE_UPDATE_POLICY_V2"
	allow        = "EFFECT_ALLOW"
	deny         = "EFFECT_DENY"
)

// documentedExamples are docs/api-notes.md §4.6, placeholders filled with concrete values.
var documentedExamples = []struct {
	effect, consensus, condition, time string
}{
	{
		allow,
		"approvers.any(user, user.id == '4b894565-fa11-42fc-b813-5bf4ea3d53f9')",
		"eth.tx.to == '0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7'",
		"",
	},
	{
		allow,
		"approvers.any(user, user.id == 'a7b0f1c2-3d4e-4f50-8a61-72b8c9d0e1f2')",
		"activity.resource == 'WALLET' && activity.action == 'CREATE'",
		"",
	},
	{
		allow,
		"approvers.filter(user, user.tags.contains('5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9')).count() >= 2",
		"activity.resource == 'POLICY' && activity.action == 'CREATE'",
		"",
	},
	{
		deny,
		"approvers.any(user, user.tags.contains('5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9'))",
		"activity.action == 'DELETE'",
		"",
	},
	{
		allow,
		"approvers.any(user, user.id == 'a7b0f1c2-3d4e-4f50-8a61-72b8c9d0e1f2')",
		"activity.resource in ['AUTH', 'OTP'] && activity.action in ['CREATE','VERIFY']",
		"",
	},
	{
		allow,
		"approvers.any(user, user.id == 'a7b0f1c2-3d4e-4f50-8a61-72b8c9d0e1f2')",
		"activity.kind == 'CREATE_READ_WRITE_SESSION'",
		"",
	},
	{
		allow,
		"credentials.any(credential, credential.type == 'CREDENTIAL_TYPE_WEBAUTHN_AUTHENTICATOR')",
		"activity.type == 'ACTIVITY_TYPE_SIGN_TRANSACTION_V2'",
		"",
	},
	{
		allow,
		"approvers.any(user, user.id == 'a7b0f1c2-3d4e-4f50-8a61-72b8c9d0e1f2')",
		"activity.action == 'EXPORT' && wallet_account.address == '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'",
		"",
	},
	{
		allow,
		"approvers.any(user, user.id == 'a7b0f1c2-3d4e-4f50-8a61-72b8c9d0e1f2')",
		"activity.action == 'SIGN' && wallet.id == 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f'",
		"",
	},
	{allow, "", "eth.tx.to == '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48' && eth.tx.data[0..10] == '0xa9059cbb'", ""},
	{allow, "", "eth.tx.chain_id == 11155111", ""},
	{
		allow,
		"",
		"eth.tx.contract_call_args['wad'] < 1000000000000000000 && eth.tx.contract_call_args['dst'] == '0x08d2b0a37F869FF76BACB5Bab3278E26ab7067B7'",
		"",
	},
	{
		allow,
		"",
		"eth.eip_712.domain.name == 'HyperliquidSignTransaction' && eth.eip_712.primary_type == 'HyperliquidTransaction:ApproveAgent' && activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'",
		"",
	},
	{
		allow,
		"",
		"eth.eip_712.domain.name == 'Permit2' && eth.eip_712.primary_type == 'PermitBatchTransferFrom' && eth.eip_712.message['permitted'].all(p, p['token'] == '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48') && activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'",
		"",
	},
	{
		deny,
		"",
		"activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' && activity.params.hash_function == 'HASH_FUNCTION_NO_OP' && activity.params.encoding != 'PAYLOAD_ENCODING_EIP712'",
		"",
	},
	{
		allow,
		"",
		"eth.eip_7702_authorization.address == '0x63c0c19a282a1b52b07dd5a65b58948a07dae32b' && eth.eip_7702_authorization.chain_id == '1' && eth.eip_7702_authorization.nonce == '0' && activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'",
		"",
	},
	{allow, "", "solana.tx.transfers.all(transfer, transfer.to == '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM')", ""},
	{
		allow,
		"approvers.any(user, user.id == 'a7b0f1c2-3d4e-4f50-8a61-72b8c9d0e1f2')",
		"solana.tx.instructions.count() == 1 && solana.tx.spl_transfers.count() == 1 && solana.tx.spl_transfers.all(transfer, transfer.from == 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v')",
		"",
	},
	{deny, "", "solana.tx.address_table_lookups.count() > 0", ""},
	{allow, "", "bitcoin.tx.outputs.all(o, o.value < 200000)", ""},
	{
		allow,
		"",
		"tron.tx.contract[0].contract_address == 'TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf' && tron.tx.contract[0].data[0..8] == 'a9059cbb'",
		"",
	},
	{
		allow,
		"",
		"activity.action == 'SIGN' && activity.params.type == 'TRANSACTION_TYPE_TEMPO' && wallet.id == 'c1d2e3f4-a5b6-4c7d-8e9f-0a1b2c3d4e5f'",
		"",
	},
	{
		allow,
		"approvers.any(user, user.id == 'a7b0f1c2-3d4e-4f50-8a61-72b8c9d0e1f2')",
		"activity.type == 'ACTIVITY_TYPE_DELETE_USERS' && activity.params.user_ids.count() == 1 && 'a7b0f1c2-3d4e-4f50-8a61-72b8c9d0e1f2' in activity.params.user_ids",
		"",
	},
	{
		allow,
		"approvers.any(user, user.tags.contains('0f1e2d3c-4b5a-4697-8877-66554433aabb'))",
		"activity.kind == 'SIGN_TRANSACTION' && eth.tx.to == '0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7'",
		"CronSpan('0 9 * * 1-5', '8h', 'America/New_York')",
	},
	{
		allow,
		"approvers.any(user, user.id == 'a7b0f1c2-3d4e-4f50-8a61-72b8c9d0e1f2')",
		"(activity.resource == 'AUTH' && activity.action == 'CREATE') || (activity.resource == 'OTP' && activity.action == 'CREATE') || (activity.resource == 'OTP' && activity.action == 'VERIFY') || (activity.resource == 'ORGANIZATION' && activity.action == 'CREATE')",
		"",
	},
}

func TestDocumentedExamplesRoundTrip(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	var ids []string
	for i, ex := range documentedExamples {
		t.Run(fmt.Sprintf("example %d", i+1), func(t *testing.T) {
			params := v3(fmt.Sprintf("example %d", i+1), ex.effect, ex.condition, ex.consensus)
			if ex.time != "" {
				params["time"] = ex.time
			}
			var res wire.CreatePolicyResult
			h.mustSubmit(h.root, "create_policy", typeCreateV3, params, &res)
			var got wire.GetPolicyResponse
			h.mustQuery(h.root, "get_policy", map[string]any{"policyId": res.PolicyId}, &got)
			p := got.Policy
			if p.PolicyId != res.PolicyId || p.PolicyName != params["policyName"] || string(p.Effect) != ex.effect ||
				p.Condition != ex.condition || p.Consensus != ex.consensus || p.Time != ex.time || p.Notes != params["notes"] {
				t.Fatalf("read back %+v, created %v", p, params)
			}
			if p.CreatedAt.Seconds == "" || p.CreatedAt != p.UpdatedAt {
				t.Fatalf("timestamps %+v %+v", p.CreatedAt, p.UpdatedAt)
			}
			ids = append(ids, res.PolicyId)
		})
	}
	list := h.listPolicies()
	if len(list) != len(ids) {
		t.Fatalf("list_policies has %d policies, want %d", len(list), len(ids))
	}
	for i, p := range list {
		if p.PolicyId != ids[i] {
			t.Fatalf("list_policies[%d] = %s, want %s (creation order)", i, p.PolicyId, ids[i])
		}
	}
	// What the engine will read: every stored policy compiles.
	err := h.st.View(context.Background(), func(r store.Reader) error {
		ps, err := policies.ListPolicies(context.Background(), r, h.org.ID)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if _, err := p.Compile(); err != nil {
				return fmt.Errorf("%s: %w", p.Name, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAbsentExpressionsReadBackEmpty(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	var res wire.CreatePolicyResult
	h.mustSubmit(h.root, "create_policy", typeCreateV3, v3("allow all", allow, "", ""), &res)
	var raw map[string]any
	h.mustQuery(h.root, "get_policy", map[string]any{"policyId": res.PolicyId}, &raw)
	p := raw["policy"].(map[string]any)
	if p["condition"] != "" || p["consensus"] != "" {
		t.Fatalf("absent condition/consensus should read back as \"\": %v", p)
	}
	if _, ok := p["time"]; ok {
		t.Fatalf("absent time should be omitted: %v", p)
	}
}

func TestInvalidPoliciesAreRefused(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	var existing wire.CreatePolicyResult
	h.mustSubmit(
		h.root,
		"create_policy",
		typeCreateV3,
		v3("existing", allow, "activity.action == 'SIGN'", ""),
		&existing,
	)
	withTime := func(p map[string]any, tm string) map[string]any { p["time"] = tm; return p }
	cases := []struct {
		name   string
		path   string
		typ    string
		params any
		status int
		msg    string
	}{
		{"bad condition", "create_policy", typeCreateV3, v3("p", allow, "wallet.id == ('a', 'b')", ""),
			400, "parameters.condition: invalid policy condition: 1:18: expected ')' but found ','"},
		{"bad consensus", "create_policy", typeCreateV3, v3("p", allow, "", "approvers.any(user user.id == 'x')"),
			400, "parameters.consensus: invalid policy consensus: 1:20: expected ',' but found identifier 'user'"},
		{"ill-typed condition", "create_policy", typeCreateV3, v3("p", allow, "'a' == true", ""),
			400, "parameters.condition: invalid policy condition: 1:5: cannot compare string with bool"},
		{
			"time keyword in condition",
			"create_policy",
			typeCreateV3,
			v3("p", allow, "time.now > Timestamp('2025-01-01T00:00:00Z')", ""),
			400,
			"parameters.condition: invalid policy condition: 1:1: the keyword 'time' is only available in a policy's time field",
		},
		{
			"bad time zone",
			"create_policy",
			typeCreateV3,
			withTime(v3("p", allow, "", ""), "CronSpan('0 9 * * 1-5', '8h', 'Mars/Olympus')"),
			400,
			"parameters.time: invalid policy time: 1:31: unknown IANA time zone 'Mars/Olympus'",
		},
		{"approvers in time", "create_policy", typeCreateV3, withTime(v3("p", allow, "", ""), "approvers.count() > 1"),
			400, "parameters.time: invalid policy time: 1:1: unknown identifier 'approvers'"},
		{"bad effect", "create_policy", typeCreateV3, v3("p", "EFFECT_MAYBE", "", ""), 400, "parameters.effect"},
		{
			"blank name",
			"create_policy",
			typeCreateV3,
			v3("   ", allow, "", ""),
			400,
			"parameters.policyName is required",
		},
		{
			"duplicate name",
			"create_policy",
			typeCreateV3,
			v3("existing", deny, "", ""),
			400,
			"parameters.policyName: policy label must be unique",
		},
		{
			"duplicate name trimmed",
			"create_policy",
			typeCreateV3,
			v3(" existing ", deny, "", ""),
			400,
			"policy label must be unique",
		},
		{"bad condition in a batch", "create_policies", "ACTIVITY_TYPE_CREATE_POLICIES",
			map[string]any{"policies": []any{v3("a", allow, "", ""), v3("b", allow, "activity.action ==", "")}},
			400, "parameters.policies[1].condition: invalid policy condition: 1:19: expected an operand but found end of input"},
		{"duplicate name in a batch", "create_policies", "ACTIVITY_TYPE_CREATE_POLICIES",
			map[string]any{"policies": []any{v3("twin", allow, "", ""), v3("twin", deny, "", "")}},
			400, "parameters.policies[1].policyName: policy label must be unique"},
		{
			"empty batch",
			"create_policies",
			"ACTIVITY_TYPE_CREATE_POLICIES",
			map[string]any{"policies": []any{}},
			400,
			"parameters.policies",
		},
		{
			"update: bad condition",
			"update_policy",
			typeUpdateV2,
			map[string]any{"policyId": existing.PolicyId, "policyCondition": "activity.action =="},
			400,
			"parameters.policyCondition: invalid policy condition",
		},
		{
			"update: bad consensus",
			"update_policy",
			typeUpdateV2,
			map[string]any{"policyId": existing.PolicyId, "policyConsensus": "approvers.count() >="},
			400,
			"parameters.policyConsensus: invalid policy consensus",
		},
		{
			"update: bad time",
			"update_policy",
			typeUpdateV2,
			map[string]any{"policyId": existing.PolicyId, "time": "CronSpan('0 9 * * 1-5', '8d', 'UTC')"},
			400,
			"parameters.time: invalid policy time",
		},
		{
			"update: bad effect",
			"update_policy",
			typeUpdateV2,
			map[string]any{"policyId": existing.PolicyId, "policyEffect": "EFFECT_MAYBE"},
			400,
			"parameters.policyEffect",
		},
		{
			"update: unknown policy",
			"update_policy",
			typeUpdateV2,
			map[string]any{"policyId": id.New(), "policyName": "x"},
			400,
			"parameters.policyId: no policy",
		},
		{"selectors V2", "create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V2",
			map[string]any{
				"policyName": "old",
				"effect":     allow,
				"selectors": []any{
					map[string]any{
						"subject":  "activity.type",
						"operator": "OPERATOR_EQUAL",
						"targets":  []string{"ACTIVITY_TYPE_SIGN_TRANSACTION"},
					},
				},
			},
			501, "parameters.selectors"},
		{"selectors V1", "create_policy", "ACTIVITY_TYPE_CREATE_POLICY",
			map[string]any{
				"policyName": "old",
				"effect":     allow,
				"selectors": []any{
					map[string]any{
						"subject":  "activity.type",
						"operator": "OPERATOR_EQUAL",
						"target":   "ACTIVITY_TYPE_SIGN_TRANSACTION",
					},
				},
			},
			501, "parameters.selectors"},
		{
			"delete: unknown",
			"delete_policy",
			"ACTIVITY_TYPE_DELETE_POLICY",
			map[string]any{"policyId": id.New()},
			400,
			"parameters.policyId: no policy",
		},
		{
			"delete many: unknown",
			"delete_policies",
			"ACTIVITY_TYPE_DELETE_POLICIES",
			map[string]any{"policyIds": []string{existing.PolicyId, id.New()}},
			400,
			"parameters.policyIds[1]: no policy",
		},
		{
			"delete many: twice",
			"delete_policies",
			"ACTIVITY_TYPE_DELETE_POLICIES",
			map[string]any{"policyIds": []string{existing.PolicyId, existing.PolicyId}},
			400,
			"parameters.policyIds[1]: policy " + existing.PolicyId + " is listed twice",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.submit(h.root, tc.path, tc.typ, tc.params)
			wantErr(t, err, tc.status, tc.msg)
		})
	}
	// Nothing any refusal touched was written: only "existing" is there, unchanged.
	list := h.listPolicies()
	if len(list) != 1 || list[0].PolicyName != "existing" || list[0].Condition != "activity.action == 'SIGN'" ||
		list[0].Effect != allow {
		t.Fatalf("policies after refusals: %+v", list)
	}
}

func TestCreatePoliciesIsAllOrNothing(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	_, err := h.submit(h.root, "create_policies", "ACTIVITY_TYPE_CREATE_POLICIES", map[string]any{"policies": []any{
		v3("first", allow, "activity.action == 'SIGN'", ""),
		v3("second", deny, "activity.action == 'DELETE'", ""),
		v3("third", allow, "", "approvers.any(u, u.id == "),
	}})
	wantErr(t, err, 400, "parameters.policies[2].consensus: invalid policy consensus")
	if list := h.listPolicies(); len(list) != 0 {
		t.Fatalf("a refused create_policies left %d policies", len(list))
	}

	var res wire.CreatePoliciesResult
	h.mustSubmit(h.root, "create_policies", "ACTIVITY_TYPE_CREATE_POLICIES", map[string]any{"policies": []any{
		v3("first", allow, "activity.action == 'SIGN'", ""),
		v3("second", deny, "activity.action == 'DELETE'", ""),
	}}, &res)
	list := h.listPolicies()
	if len(res.PolicyIds) != 2 || len(list) != 2 || list[0].PolicyId != res.PolicyIds[0] ||
		list[1].PolicyName != "second" {
		t.Fatalf("created %v, listed %+v", res.PolicyIds, list)
	}
}

func TestUpdatePolicy(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	var a, b wire.CreatePolicyResult
	h.mustSubmit(
		h.root,
		"create_policy",
		typeCreateV3,
		v3("alpha", allow, "activity.action == 'SIGN'", "approvers.count() >= 1"),
		&a,
	)
	h.mustSubmit(h.root, "create_policy", typeCreateV3, v3("beta", allow, "", ""), &b)
	get := func(pid string) wire.Policy {
		var got wire.GetPolicyResponse
		h.mustQuery(h.root, "get_policy", map[string]any{"policyId": pid}, &got)
		return got.Policy
	}
	before := get(a.PolicyId)

	t.Run("rename and change effect, other fields kept", func(t *testing.T) {
		var res wire.UpdatePolicyResultV2
		h.mustSubmit(
			h.root,
			"update_policy",
			typeUpdateV2,
			map[string]any{"policyId": a.PolicyId, "policyName": "gamma", "policyEffect": deny},
			&res,
		)
		p := get(a.PolicyId)
		if res.PolicyId != a.PolicyId || p.PolicyName != "gamma" || p.Effect != deny ||
			p.Condition != before.Condition ||
			p.Consensus != before.Consensus ||
			p.Notes != before.Notes ||
			p.CreatedAt != before.CreatedAt ||
			p.UpdatedAt == before.UpdatedAt {
			t.Fatalf("after update %+v (before %+v)", p, before)
		}
	})
	t.Run("the old name is free again", func(t *testing.T) {
		h.mustSubmit(h.root, "create_policy", typeCreateV3, v3("alpha", allow, "", ""), nil)
	})
	t.Run("expressions, notes and time", func(t *testing.T) {
		h.mustSubmit(h.root, "update_policy", typeUpdateV2, map[string]any{"policyId": a.PolicyId,
			"policyCondition": "activity.resource == 'WALLET'", "policyConsensus": "approvers.any(u, u.id == 'x')",
			"policyNotes": "new notes", "time": "time.now < Timestamp('2030-01-01T00:00:00Z')"}, nil)
		p := get(a.PolicyId)
		if p.Condition != "activity.resource == 'WALLET'" || p.Consensus != "approvers.any(u, u.id == 'x')" ||
			p.Notes != "new notes" ||
			p.Time != "time.now < Timestamp('2030-01-01T00:00:00Z')" ||
			p.PolicyName != "gamma" {
			t.Fatalf("after update %+v", p)
		}
	})
	t.Run("renaming onto another policy's name is refused", func(t *testing.T) {
		_, err := h.submit(
			h.root,
			"update_policy",
			typeUpdateV2,
			map[string]any{"policyId": a.PolicyId, "policyName": "beta"},
		)
		wantErr(t, err, 400, "parameters.policyName: policy label must be unique")
		if p := get(a.PolicyId); p.PolicyName != "gamma" {
			t.Fatalf("refused rename changed the name to %q", p.PolicyName)
		}
	})
	t.Run("UPDATE_POLICY (V1) is accepted", func(t *testing.T) {
		var res wire.UpdatePolicyResult
		h.mustSubmit(
			h.root,
			"update_policy",
			"ACTIVITY_TYPE_UPDATE_POLICY",
			map[string]any{"policyId": b.PolicyId, "policyName": "beta v1",
				"policyCondition": "activity.action == 'EXPORT'"},
			&res,
		)
		if p := get(b.PolicyId); res.PolicyId != b.PolicyId || p.PolicyName != "beta v1" ||
			p.Condition != "activity.action == 'EXPORT'" {
			t.Fatalf("after V1 update %+v", p)
		}
	})
}

func TestOlderCreateVersionsWithoutSelectors(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	for _, typ := range []string{"ACTIVITY_TYPE_CREATE_POLICY_V2", "ACTIVITY_TYPE_CREATE_POLICY"} {
		t.Run(typ, func(t *testing.T) {
			var res wire.CreatePolicyResult
			h.mustSubmit(
				h.root,
				"create_policy",
				typ,
				map[string]any{"policyName": typ, "effect": deny, "selectors": []any{}},
				&res,
			)
			var got wire.GetPolicyResponse
			h.mustQuery(h.root, "get_policy", map[string]any{"policyId": res.PolicyId}, &got)
			if got.Policy.PolicyName != typ || got.Policy.Effect != deny || got.Policy.Condition != "" ||
				got.Policy.Notes != "" {
				t.Fatalf("read back %+v", got.Policy)
			}
		})
	}
}

func TestDeletePolicies(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	var res wire.CreatePoliciesResult
	h.mustSubmit(h.root, "create_policies", "ACTIVITY_TYPE_CREATE_POLICIES", map[string]any{"policies": []any{
		v3("one", allow, "", ""), v3("two", allow, "", ""), v3("three", allow, "", ""),
	}}, &res)
	var del wire.DeletePolicyResult
	h.mustSubmit(
		h.root,
		"delete_policy",
		"ACTIVITY_TYPE_DELETE_POLICY",
		map[string]any{"policyId": res.PolicyIds[0]},
		&del,
	)
	if del.PolicyId != res.PolicyIds[0] {
		t.Fatalf("delete_policy answered %+v", del)
	}
	err := h.query(h.root, "get_policy", map[string]any{"policyId": res.PolicyIds[0]}, &wire.GetPolicyResponse{})
	wantErr(t, err, 404, "policy not found")

	// delete_policies is all or nothing too.
	_, err = h.submit(
		h.root,
		"delete_policies",
		"ACTIVITY_TYPE_DELETE_POLICIES",
		map[string]any{"policyIds": []string{res.PolicyIds[1], res.PolicyIds[0]}},
	)
	wantErr(t, err, 400, "parameters.policyIds[1]: no policy")
	if n := len(h.listPolicies()); n != 2 {
		t.Fatalf("%d policies after a refused delete_policies, want 2", n)
	}
	var dels wire.DeletePoliciesResult
	h.mustSubmit(
		h.root,
		"delete_policies",
		"ACTIVITY_TYPE_DELETE_POLICIES",
		map[string]any{"policyIds": res.PolicyIds[1:]},
		&dels,
	)
	if len(dels.PolicyIds) != 2 || len(h.listPolicies()) != 0 {
		t.Fatalf("delete_policies answered %+v; left %d", dels, len(h.listPolicies()))
	}
	// A deleted policy's name can be used again.
	h.mustSubmit(h.root, "create_policy", typeCreateV3, v3("one", deny, "", ""), nil)
}

func TestPolicyLimit(t *testing.T) {
	lim := directory.DefaultLimits
	lim.PoliciesPerOrg = 2
	h := newHarness(t, lim)
	_, err := h.submit(h.root, "create_policies", "ACTIVITY_TYPE_CREATE_POLICIES", map[string]any{"policies": []any{
		v3("1", allow, "", ""), v3("2", allow, "", ""), v3("3", allow, "", ""),
	}})
	wantErr(t, err, 429, "an organization can have at most 2 policies")
	if n := len(h.listPolicies()); n != 0 {
		t.Fatalf("%d policies after a refused batch", n)
	}
	h.mustSubmit(h.root, "create_policy", typeCreateV3, v3("1", allow, "", ""), nil)
	h.mustSubmit(h.root, "create_policy", typeCreateV3, v3("2", allow, "", ""), nil)
	_, err = h.submit(h.root, "create_policy", typeCreateV3, v3("3", allow, "", ""))
	wantErr(t, err, 429, "at most 2 policies")

	t.Run("default is 100", func(t *testing.T) {
		if directory.DefaultLimits.PoliciesPerOrg != 100 {
			t.Fatalf("default policy limit %d", directory.DefaultLimits.PoliciesPerOrg)
		}
		l := directory.DefaultLimits
		if p := l.LimitNames()["policies"]; p == nil || *p != 100 {
			t.Fatal("LimitNames has no \"policies\"")
		}
	})
}

func TestWritesAreForRootUsers(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	var res wire.CreatePolicyResult
	h.mustSubmit(h.root, "create_policy", typeCreateV3, v3("root's", allow, "", ""), &res)
	writes := []struct{ path, typ string }{
		{"create_policy", typeCreateV3},
		{"create_policies", "ACTIVITY_TYPE_CREATE_POLICIES"},
		{"update_policy", typeUpdateV2},
		{"delete_policy", "ACTIVITY_TYPE_DELETE_POLICY"},
		{"delete_policies", "ACTIVITY_TYPE_DELETE_POLICIES"},
		{"create_smart_contract_interface", "ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE"},
		{"delete_smart_contract_interface", "ACTIVITY_TYPE_DELETE_SMART_CONTRACT_INTERFACE"},
	}
	params := map[string]any{
		"create_policy":                   v3("member's", allow, "", ""),
		"create_policies":                 map[string]any{"policies": []any{v3("member's", allow, "", "")}},
		"update_policy":                   map[string]any{"policyId": res.PolicyId, "policyName": "hijacked"},
		"delete_policy":                   map[string]any{"policyId": res.PolicyId},
		"delete_policies":                 map[string]any{"policyIds": []string{res.PolicyId}},
		"create_smart_contract_interface": ethInterface(erc20ABI, "0x"+strings.Repeat("1", 40)),
		"delete_smart_contract_interface": map[string]any{"smartContractInterfaceId": id.New()},
	}
	for _, w := range writes {
		t.Run(w.path, func(t *testing.T) {
			_, err := h.submit(h.member, w.path, w.typ, params[w.path])
			wantErr(t, err, 403, "policy engine denied request")
		})
	}
	// Queries are open to every user.
	var got wire.GetPolicyResponse
	h.mustQuery(h.member, "get_policy", map[string]any{"policyId": res.PolicyId}, &got)
	if got.Policy.PolicyName != "root's" {
		t.Fatalf("member read %+v", got.Policy)
	}
}

func TestOrganizationsAreSeparate(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	_, otherRoot, _ := h.organization("Other")
	var res wire.CreatePolicyResult
	h.mustSubmit(h.root, "create_policy", typeCreateV3, v3("shared name", allow, "", ""), &res)
	// Names are unique per organization, not globally.
	h.mustSubmit(otherRoot, "create_policy", typeCreateV3, v3("shared name", allow, "", ""), nil)
	err := h.query(otherRoot, "get_policy", map[string]any{"policyId": res.PolicyId}, &wire.GetPolicyResponse{})
	wantErr(t, err, 404, "policy not found")
	_, err = h.submit(
		otherRoot,
		"delete_policy",
		"ACTIVITY_TYPE_DELETE_POLICY",
		map[string]any{"policyId": res.PolicyId},
	)
	wantErr(t, err, 400, "no policy")
}

func TestPolicyEvaluations(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	ctx := context.Background()
	_, otherRoot, _ := h.organization("Other")
	activityID := id.New()

	var got wire.GetPolicyEvaluationsResponse
	h.mustQuery(h.root, "get_policy_evaluations", map[string]any{"activityId": activityID}, &got)
	if got.PolicyEvaluations == nil || len(got.PolicyEvaluations) != 0 {
		t.Fatalf("nothing stored: got %+v, want []", got.PolicyEvaluations)
	}

	p1, p2 := id.New(), id.New()
	first := policies.NewEvaluation(
		id.New(),
		h.org.ID,
		activityID,
		id.New(),
		h.clock(),
		policy.OutcomeRequiresConsensus,
		[]policy.Evaluation{
			{PolicyID: p1, Outcome: policy.OutcomeRequiresConsensus},
			{PolicyID: p2, Outcome: policy.OutcomeError, Err: "missing field wallet.id"},
		},
	)
	second := policies.NewEvaluation(
		id.New(),
		h.org.ID,
		activityID,
		id.New(),
		h.tick(),
		policy.OutcomeAllow,
		[]policy.Evaluation{
			{PolicyID: p1, Outcome: policy.OutcomeAllow},
		},
	)
	none := policies.NewEvaluation(id.New(), h.org.ID, id.New(), id.New(), h.tick(), policy.OutcomeDenyImplicit, nil)
	err := h.st.Update(ctx, func(tx store.Tx) error {
		for _, e := range []*policies.Evaluation{second, first, none} {
			if err := policies.SaveEvaluation(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	h.mustQuery(h.root, "get_policy_evaluations", map[string]any{"activityId": activityID}, &got)
	want := []wire.Externalactivityv1PolicyEvaluation{first.ToWire(), second.ToWire()}
	gotJSON, _ := json.Marshal(got.PolicyEvaluations)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("got  %s\nwant %s", gotJSON, wantJSON)
	}
	if e := got.PolicyEvaluations[0]; e.OrganizationId != h.org.ID || e.ActivityId != activityID ||
		e.VoteId != first.VoteID ||
		len(e.PolicyEvaluations) != 2 ||
		e.PolicyEvaluations[1].Outcome != "OUTCOME_ERROR" {
		t.Fatalf("first evaluation %+v", e)
	}

	// Another organization does not see them.
	h.mustQuery(otherRoot, "get_policy_evaluations", map[string]any{"activityId": activityID}, &got)
	if len(got.PolicyEvaluations) != 0 {
		t.Fatalf("another organization read %+v", got.PolicyEvaluations)
	}

	// Evaluations are written once.
	err = h.st.Update(ctx, func(tx store.Tx) error { return policies.SaveEvaluation(ctx, tx, first) })
	if err == nil {
		t.Fatal("saving an evaluation twice succeeded")
	}
}

const erc20ABI = `[
 {"type":"function","name":"transfer","stateMutability":"nonpayable","inputs":[{"name":"to","type":"address"},{"name":"amount","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"balanceOf","stateMutability":"view","inputs":[{"name":"account","type":"address","internalType":"address"}],"outputs":[{"name":"","type":"uint256"}]},
 {"type":"event","name":"Transfer","anonymous":false,"inputs":[{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},{"name":"value","type":"uint256","indexed":false}]},
 {"type":"error","name":"InsufficientBalance","inputs":[{"name":"needed","type":"uint256"}]},
 {"type":"constructor","inputs":[{"name":"supply","type":"uint256"}]},
 {"type":"receive","stateMutability":"payable"},
 {"type":"fallback"},
 {"name":"executeBatch","inputs":[{"name":"calls","type":"tuple[]","components":[{"name":"target","type":"address"},{"name":"value","type":"uint256"},{"name":"data","type":"bytes"}]},{"name":"ids","type":"bytes32[2][]"},{"name":"f","type":"fixed128x18"}],"outputs":[]}
]`

const anchorIDL = `{
 "address": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
 "metadata": {"name": "token", "version": "0.1.0", "spec": "0.1.0"},
 "instructions": [
  {"name": "transfer", "discriminator": [163,52,200,231,140,3,69,186],
   "accounts": [{"name": "from", "writable": true}, {"name": "to", "writable": true}, {"name": "authority", "signer": true}],
   "args": [{"name": "amount", "type": "u64"}, {"name": "memo", "type": {"option": "string"}}]}
 ],
 "types": []
}`

func ethInterface(abi, address string) map[string]any {
	return map[string]any{"smartContractAddress": address, "smartContractInterface": abi,
		"type": policies.InterfaceEthereum, "label": "ERC-20", "notes": "token"}
}

func solInterface(idl, address string) map[string]any {
	return map[string]any{"smartContractAddress": address, "smartContractInterface": idl,
		"type": policies.InterfaceSolana, "label": "Token program"}
}

func TestSmartContractInterfacesRoundTrip(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	ctx := context.Background()
	const createType = "ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE"
	ethAddr := "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
	solAddr := "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"

	var eth, sol wire.CreateSmartContractInterfaceResult
	h.mustSubmit(h.root, "create_smart_contract_interface", createType, ethInterface(erc20ABI, ethAddr), &eth)
	h.mustSubmit(h.root, "create_smart_contract_interface", createType, solInterface(anchorIDL, solAddr), &sol)

	var got wire.GetSmartContractInterfaceResponse
	h.mustQuery(
		h.root,
		"get_smart_contract_interface",
		map[string]any{"smartContractInterfaceId": eth.SmartContractInterfaceId},
		&got,
	)
	s := got.SmartContractInterface
	if s.SmartContractInterfaceId != eth.SmartContractInterfaceId || s.OrganizationId != h.org.ID ||
		s.SmartContractAddress != strings.ToLower(ethAddr) ||
		s.SmartContractInterface != erc20ABI ||
		s.Type != policies.InterfaceEthereum ||
		s.Label != "ERC-20" ||
		s.Notes != "token" ||
		s.CreatedAt.Seconds == "" {
		t.Fatalf("read back %+v", s)
	}
	h.mustQuery(
		h.root,
		"get_smart_contract_interface",
		map[string]any{"smartContractInterfaceId": sol.SmartContractInterfaceId},
		&got,
	)
	if s := got.SmartContractInterface; s.SmartContractAddress != solAddr || s.SmartContractInterface != anchorIDL ||
		s.Type != policies.InterfaceSolana ||
		s.Notes != "" {
		t.Fatalf("read back %+v", s)
	}

	var list wire.GetSmartContractInterfacesResponse
	h.mustQuery(h.root, "list_smart_contract_interfaces", nil, &list)
	if len(list.SmartContractInterfaces) != 2 ||
		list.SmartContractInterfaces[0].SmartContractInterfaceId != eth.SmartContractInterfaceId {
		t.Fatalf("list %+v", list.SmartContractInterfaces)
	}

	// What the evaluator does with eth.tx.to: find the ABI whatever the address's case.
	err := h.st.View(ctx, func(r store.Reader) error {
		for addr, want := range map[string]string{
			ethAddr: eth.SmartContractInterfaceId, strings.ToLower(ethAddr): eth.SmartContractInterfaceId,
			"0x" + strings.ToUpper(ethAddr[2:]): eth.SmartContractInterfaceId, solAddr: sol.SmartContractInterfaceId,
			"0x" + strings.Repeat("0", 40): "", strings.ToLower(solAddr): "",
		} {
			s, err := policies.InterfaceForAddress(ctx, r, h.org.ID, addr)
			if err != nil {
				return err
			}
			if (s == nil && want != "") || (s != nil && s.ID != want) {
				return fmt.Errorf("InterfaceForAddress(%s) = %+v, want %q", addr, s, want)
			}
		}
		s, err := policies.InterfaceForAddress(ctx, r, id.New(), ethAddr)
		if err != nil || s != nil {
			return fmt.Errorf("another organization's lookup found %+v, %v", s, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// One interface per address.
	_, err = h.submit(
		h.root,
		"create_smart_contract_interface",
		createType,
		ethInterface(erc20ABI, strings.ToLower(ethAddr)),
	)
	wantErr(
		t,
		err,
		409,
		"parameters.smartContractAddress: a smart contract interface for "+strings.ToLower(ethAddr)+" already exists",
	)

	var del wire.DeleteSmartContractInterfaceResult
	h.mustSubmit(h.root, "delete_smart_contract_interface", "ACTIVITY_TYPE_DELETE_SMART_CONTRACT_INTERFACE",
		map[string]any{"smartContractInterfaceId": eth.SmartContractInterfaceId}, &del)
	if del.SmartContractInterfaceId != eth.SmartContractInterfaceId {
		t.Fatalf("delete answered %+v", del)
	}
	err = h.query(
		h.root,
		"get_smart_contract_interface",
		map[string]any{"smartContractInterfaceId": eth.SmartContractInterfaceId},
		&got,
	)
	wantErr(t, err, 404, "smart contract interface not found")
	_, err = h.submit(h.root, "delete_smart_contract_interface", "ACTIVITY_TYPE_DELETE_SMART_CONTRACT_INTERFACE",
		map[string]any{"smartContractInterfaceId": eth.SmartContractInterfaceId})
	wantErr(t, err, 400, "parameters.smartContractInterfaceId: no smart contract interface")
	h.mustQuery(h.root, "list_smart_contract_interfaces", nil, &list)
	if len(list.SmartContractInterfaces) != 1 {
		t.Fatalf("list after delete %+v", list.SmartContractInterfaces)
	}
	// The address is free again.
	h.mustSubmit(h.root, "create_smart_contract_interface", createType, ethInterface(erc20ABI, ethAddr), nil)
}

func TestInvalidSmartContractInterfacesAreRefused(t *testing.T) {
	h := newHarness(t, directory.DefaultLimits)
	const createType = "ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE"
	ethAddr := "0x" + strings.Repeat("ab", 20)
	solAddr := "11111111111111111111111111111111"
	const fABI = "parameters.smartContractInterface: not an Ethereum ABI: "
	const fIDL = "parameters.smartContractInterface: not an Anchor IDL: "
	withLabel := func(p map[string]any, l string) map[string]any { p["label"] = l; return p }
	cases := []struct {
		name   string
		params map[string]any
		msg    string
	}{
		{"ABI not JSON", ethInterface(`[{"type":"function",`, ethAddr), fABI + "expected a JSON array of ABI entries"},
		{
			"ABI an object",
			ethInterface(`{"abi":[]}`, ethAddr),
			fABI + "expected a JSON array of ABI entries: expected an array, got JSON object",
		},
		{"ABI empty", ethInterface(`[]`, ethAddr), fABI + "the ABI has no entries"},
		{
			"ABI trailing data",
			ethInterface(`[{"type":"fallback"}] []`, ethAddr),
			fABI + "expected a JSON array of ABI entries: trailing data",
		},
		{"entry not an object", ethInterface(`[1]`, ethAddr), fABI + "entry 0: expected an object, got JSON number"},
		{
			"unknown entry type",
			ethInterface(`[{"type":"method","name":"f"}]`, ethAddr),
			fABI + `entry 0: unknown type "method"`,
		},
		{
			"function without name",
			ethInterface(`[{"type":"function","inputs":[]}]`, ethAddr),
			fABI + "entry 0: a function entry needs a name that is an identifier",
		},
		{
			"event name not an identifier",
			ethInterface(`[{"type":"event","name":"Trans fer","inputs":[]}]`, ethAddr),
			fABI + "entry 0: an event entry needs a name that is an identifier",
		},
		{
			"name not a string",
			ethInterface(`[{"type":"function","name":7}]`, ethAddr),
			fABI + "entry 0: name: expected a string, got JSON number",
		},
		{
			"bad state mutability",
			ethInterface(`[{"type":"function","name":"f","stateMutability":"constant"}]`, ethAddr),
			fABI + `entry 0: function "f": unknown stateMutability "constant"`,
		},
		{
			"bad input type",
			ethInterface(
				`[{"name":"transfer","inputs":[{"name":"to","type":"address"},{"name":"amount","type":"uint7"}]}]`,
				ethAddr,
			),
			fABI + `entry 0: function "transfer": input 1: unknown type "uint7"`,
		},
		{
			"bytes33",
			ethInterface(`[{"name":"f","inputs":[{"name":"x","type":"bytes33"}]}]`, ethAddr),
			fABI + `entry 0: function "f": input 0: unknown type "bytes33"`,
		},
		{
			"zero-length array",
			ethInterface(`[{"name":"f","inputs":[{"name":"x","type":"uint256[0]"}]}]`, ethAddr),
			fABI + `entry 0: function "f": input 0: type "uint256[0]": array length must be positive`,
		},
		{
			"missing param type",
			ethInterface(`[{"name":"f","outputs":[{"name":"x"}]}]`, ethAddr),
			fABI + `entry 0: function "f": output 0: type is required`,
		},
		{
			"tuple without components",
			ethInterface(`[{"name":"f","inputs":[{"name":"x","type":"tuple"}]}]`, ethAddr),
			fABI + `entry 0: function "f": input 0: type "tuple" needs components`,
		},
		{
			"bad component",
			ethInterface(
				`[{"name":"f","inputs":[{"name":"x","type":"tuple","components":[{"name":"y","type":"strin"}]}]}]`,
				ethAddr,
			),
			fABI + `entry 0: function "f": input 0: component 0: unknown type "strin"`,
		},
		{
			"IDL an array",
			solInterface(`[]`, solAddr),
			fIDL + "expected a JSON object: expected an object, got JSON array",
		},
		{"IDL not JSON", solInterface(`{"instructions":`, solAddr), fIDL + "expected a JSON object"},
		{
			"IDL without instructions",
			solInterface(`{"name":"x","version":"0.1.0"}`, solAddr),
			fIDL + "instructions is required",
		},
		{
			"IDL instructions not a list",
			solInterface(`{"instructions":{}}`, solAddr),
			fIDL + "expected a JSON object: instructions: expected an array, got JSON object",
		},
		{
			"IDL instruction without name",
			solInterface(`{"instructions":[{"accounts":[]}]}`, solAddr),
			fIDL + "instruction 0: name is required",
		},
		{
			"IDL arg without type",
			solInterface(`{"instructions":[{"name":"t","args":[{"name":"amount"}]}]}`, solAddr),
			fIDL + `instruction "t": arg "amount": type is required`,
		},
		{
			"ETH address short",
			ethInterface(erc20ABI, "0x1234"),
			"parameters.smartContractAddress: not an Ethereum address",
		},
		{
			"ETH address without 0x",
			ethInterface(erc20ABI, strings.Repeat("ab", 21)),
			"parameters.smartContractAddress: not an Ethereum address",
		},
		{
			"ETH address not hex",
			ethInterface(erc20ABI, "0x"+strings.Repeat("zz", 20)),
			"parameters.smartContractAddress: not an Ethereum address",
		},
		{
			"ETH address given as Solana",
			solInterface(anchorIDL, ethAddr),
			"parameters.smartContractAddress: not a Solana program id",
		},
		{
			"Solana address bad character",
			solInterface(anchorIDL, "0OIl"+solAddr[4:]),
			"parameters.smartContractAddress: not a Solana program id",
		},
		{
			"Solana address too short",
			solInterface(anchorIDL, "1111"),
			"parameters.smartContractAddress: not a Solana program id",
		},
		{
			"unknown type",
			map[string]any{
				"smartContractAddress":   ethAddr,
				"smartContractInterface": erc20ABI,
				"type":                   "SMART_CONTRACT_INTERFACE_TYPE_TRON",
				"label":                  "x",
			},
			"parameters.type",
		},
		{"label required", withLabel(ethInterface(erc20ABI, ethAddr), " "), "parameters.label is required"},
		{
			"too large",
			ethInterface(
				`[`+strings.Repeat(`{"type":"fallback"},`, policies.MaxInterfaceBytes/20)+`{"type":"fallback"}]`,
				ethAddr,
			),
			"parameters.smartContractInterface: must be at most",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.submit(h.root, "create_smart_contract_interface", createType, tc.params)
			wantErr(t, err, 400, tc.msg)
		})
	}
	var list wire.GetSmartContractInterfacesResponse
	h.mustQuery(h.root, "list_smart_contract_interfaces", nil, &list)
	if list.SmartContractInterfaces == nil || len(list.SmartContractInterfaces) != 0 {
		t.Fatalf("after refusals: %+v", list.SmartContractInterfaces)
	}
}

func TestCheckABIAcceptsRealABIs(t *testing.T) {
	for name, abi := range map[string]string{
		"erc20 with every entry kind": erc20ABI,
		"no type means function":      `[{"name":"deposit","inputs":[],"outputs":[],"stateMutability":"payable"}]`,
		"nested tuples and arrays":    `[{"type":"function","name":"f","inputs":[{"name":"","type":"tuple[3][]","components":[{"name":"a","type":"tuple","components":[{"name":"b","type":"int8[]"}]},{"name":"c","type":"string"}]}]}]`,
		"unnamed and $ names":         `[{"type":"function","name":"$f_1","inputs":[{"type":"bytes1"},{"name":"","type":"bytes32"},{"name":"_x","type":"int"}]}]`,
	} {
		if err := policies.CheckABI([]byte(abi)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
