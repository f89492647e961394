package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"
)

// documentedExample is one entry of testdata/documented_examples.json: a
// policy from docs/api-notes.md §4.6 (source cited per entry) and environments
// built to match and to miss it.
type documentedExample struct {
	N         int    `json:"n"`
	Source    string `json:"source"`
	Effect    string `json:"effect"`
	Condition string `json:"condition"`
	Consensus string `json:"consensus"`
	Time      string `json:"time"`
	Cases     []struct {
		Name        string         `json:"name"`
		Want        Outcome        `json:"want"`
		WantPolicy  Outcome        `json:"want_policy"`
		Now         string         `json:"now"`
		Env         map[string]any `json:"env"`
		Approvers   []any          `json:"approvers"`
		Credentials []any          `json:"credentials"`
	} `json:"cases"`
}

func loadDocumentedExamples(t testing.TB) []documentedExample {
	t.Helper()
	f, err := os.Open("testdata/documented_examples.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.UseNumber()
	var file struct {
		Examples []documentedExample `json:"examples"`
	}
	if err := dec.Decode(&file); err != nil {
		t.Fatal(err)
	}
	return file.Examples
}

// compileExample compiles the example's fields; absent fields stay nil.
func compileExample(t testing.TB, ex documentedExample) Policy {
	t.Helper()
	p := Policy{ID: fmt.Sprintf("example-%d", ex.N), Effect: ex.Effect}
	var err error
	if ex.Condition != "" {
		if p.Condition, err = Compile(ex.Condition); err != nil {
			t.Fatalf("#%d condition: %v", ex.N, err)
		}
	}
	if ex.Consensus != "" {
		if p.Consensus, err = Compile(ex.Consensus); err != nil {
			t.Fatalf("#%d consensus: %v", ex.N, err)
		}
	}
	if ex.Time != "" {
		if p.Time, err = CompileTime(ex.Time); err != nil {
			t.Fatalf("#%d time: %v", ex.N, err)
		}
	}
	return p
}

// conditionEnv converts a JSON environment; an "activity" object {type,
// params} is expanded into the full activity view (kind, resource, action).
func conditionEnv(env map[string]any) ValueEnv {
	out := ValueEnv{}
	for k, v := range env {
		if k == "activity" {
			a := v.(map[string]any)
			params, _ := FromGo(a["params"]).(Map)
			out[k] = ActivityView(a["type"].(string), params)
			continue
		}
		out[k] = FromGo(v)
	}
	return out
}

func consensusEnv(approvers, credentials []any) ValueEnv {
	if approvers == nil {
		approvers = []any{}
	}
	if credentials == nil {
		credentials = []any{}
	}
	return ValueEnv{"approvers": FromGo(approvers), "credentials": FromGo(credentials)}
}

func TestDocumentedExamples(t *testing.T) {
	examples := loadDocumentedExamples(t)
	if len(examples) != 25 {
		t.Fatalf("want the 25 documented examples, found %d", len(examples))
	}
	for _, ex := range examples {
		p := compileExample(t, ex)
		matched, missed := false, false
		for _, c := range ex.Cases {
			t.Run(fmt.Sprintf("%02d/%s", ex.N, c.Name), func(t *testing.T) {
				now := c.Now
				if now == "" {
					now = "2026-03-11T14:00:00Z"
				}
				ts, err := time.Parse(time.RFC3339, now)
				if err != nil {
					t.Fatal(err)
				}
				got, per := Decide(
					[]Policy{p},
					conditionEnv(c.Env),
					consensusEnv(c.Approvers, c.Credentials),
					TimeEnv(ts),
				)
				if got != c.Want {
					t.Errorf("Decide = %s, want %s (per policy: %+v) [%s]", got, c.Want, per, ex.Source)
				}
				if c.WantPolicy != "" && per[0].Outcome != c.WantPolicy {
					t.Errorf("policy outcome = %s, want %s (%s)", per[0].Outcome, c.WantPolicy, per[0].Err)
				}
				if per[0].Outcome != OutcomeError && per[0].Err != "" {
					t.Errorf("unexpected error text %q", per[0].Err)
				}
			})
			if c.Want == OutcomeAllow || c.Want == OutcomeDenyExplicit {
				matched = true
			} else {
				missed = true
			}
		}
		if !matched || !missed {
			t.Errorf("example #%d needs a matching and a missing environment", ex.N)
		}
	}
}

// docsCorpus is every condition/consensus/time string found in tkhq/docs
// with a quoted placeholder or concrete values (the unquoted-placeholder
// forms such as `o.address == <BITCOIN_ADDRESS>` are not valid syntax until
// the placeholder is filled in, and are listed in TestUnquotedPlaceholders).
var docsCorpus = []string{
	"(activity.resource == 'AUTH' && activity.action == 'CREATE') || (activity.resource == 'ORGANIZATION' && activity.action == 'CREATE')",
	"activity.action == 'SIGN' && activity.params.type == 'TRANSACTION_TYPE_TEMPO' && private_key.tags.contains('tempo-enabled')",
	"activity.action == 'SIGN' && eth.tx.value > 500000000000000000",
	"activity.action == 'SIGN' && wallet.id == '<AGENT_WALLET_ID>' && eth.tx.to == '<UNISWAP_ROUTER_ADDRESS>' && eth.tx.chain_id == '1'",
	"activity.action == 'SIGN' && wallet.id == '<DEPLOYER_WALLET_ID>' && eth.tx.to == '' && eth.tx.chain_id == '8453'",
	"activity.action == 'SIGN' && wallet.id == '<DEPOSITS_WALLET_ID>' && solana.tx.transfers.count == 1 && solana.tx.transfers[0].to == '<OMNIBUS_ADDRESS>'",
	"activity.action == 'SIGN' && wallet.id == '<OMNIBUS_WALLET_ID>' && (eth.tx.to == '<COLD_WALLET_ADDRESS>' || (eth.tx.data[0..10] == '0xa9059cbb' && eth.tx.data[34..74] == '<COLD_WALLET_ADDRESS>'))",
	"activity.kind in ['INIT_OTP', 'VERIFY_OTP', 'OTP_LOGIN', 'CREATE_SUB_ORGANIZATION']",
	"activity.resource == 'POLICY' && (activity.action == 'CREATE' || activity.action == 'UPDATE' || activity.action == 'DELETE')",
	"activity.type == 'ACTIVITY_TYPE_SPARK_CLAIM_TRANSFER' && activity.params.sign_with == '<SPARK_WALLET_ACCOUNT_ADDRESS>' && activity.params.claim.sender_identity_public_key in ['<SENDER_IDENTITY_PUBLIC_KEY_1>', '<SENDER_IDENTITY_PUBLIC_KEY_2>']",
	"activity.type == 'ACTIVITY_TYPE_SPARK_PREPARE_TRANSFER' && activity.params.sign_with == '<SPARK_WALLET_ACCOUNT_ADDRESS>' && activity.params.transfer.leaves.count() > 0 && activity.params.transfer.leaves.all(leaf, leaf.old_leaf_derivation.type == 'signing_leaf' && leaf.new_leaf_derivation.type == 'signing_leaf' && leaf.leaf_id in ['<LEAF_ID_1>', '<LEAF_ID_2>'])",
	"activity.type == 'ACTIVITY_TYPE_SPARK_SIGN_FROST' && activity.params.sign_with == '<SPARK_WALLET_ACCOUNT_ADDRESS>' && activity.params.signatures.count() > 0 && activity.params.signatures.all(sig, sig.derivation.type == 'static_deposit' && sig.derivation.static_deposit.index == 0)",
	"activity.type in ['ACTIVITY_TYPE_SIGN_TRANSACTION_V2', 'ACTIVITY_TYPE_ETH_SEND_TRANSACTION'] && wallet.id == '<AGENT_WALLET_ID>'",
	"bitcoin.tx.fee <= 10000",
	"eth.eip_712.domain.name == 'Permit2' && eth.eip_712.primary_type == 'PermitBatchTransferFrom' && eth.eip_712.message['permitted'].any(p, p['token'] == '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48' && p['amount'] < 100000000) && activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'",
	"eth.eip_712.domain.name == 'Permit2' && eth.eip_712.primary_type == 'PermitBatchTransferFrom' && eth.eip_712.message['permitted'][0]['token'] == '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48' && activity.type == 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2'",
	"eth.tx.function_name == 'disperse' && eth.tx.contract_call_args['recipients'].all(addr, addr in ['<ADDRESS_1>', '<ADDRESS_2>', '<ADDRESS_3>'])",
	"eth.tx.function_name == 'executeBatch' && eth.tx.contract_call_args['calls'].count() <= 2 && eth.tx.contract_call_args['calls'].all(call, call[0] == '<CONTRACT_ADDRESS>' && call[1] == 0)",
	"eth.tx.to == '<UNISWAP_ROUTER>' && eth.tx.data[0..10] == '0x38ed1739' && eth.tx.chain_id == 1",
	"private_key.id == '<PRIVATE_KEY_ID>' && tempo.tx.calls.all(call, call.to == '0x40f008f4c17075EFcA092aE650655f6693AECEd0')",
	"secret.static_properties['requiresConsensus'] == 'true' && secret.static_properties['kind'] == 'creditCard' && activity.type == 'ACTIVITY_TYPE_EXPORT_SECRETS'",
	"solana.tx.instructions.any(i, i.program_key == 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL') || solana.tx.instructions.any(i, (i.program_key == 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA' || i.program_key == 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb') && (i.instruction_data_hex == '09' || i.instruction_data_hex == '11'))",
	"solana.tx.instructions.any(i, i.program_key == 'JUP6LkbZbjS1jKKwapdHNy74zcZ3tLUZoi5QNyVTaV4' && i.parsed_instruction_data.instruction_name == 'route' && i.parsed_instruction_data.program_call_args['in_amount'] == 995500000)",
	"solana.tx.instructions.count() == 1 && solana.tx.spl_transfers.count() == 1 && solana.tx.spl_transfers.all(transfer, transfer.signers.any(s, s == '<SIGNER_ADDRESS>'))",
	"solana.tx.instructions.count() == solana.tx.spl_transfers.count() && solana.tx.spl_transfers.all(transfer, transfer.owner == '<OWNER_ADDRESS>')",
	"solana.tx.instructions[0].accounts[0].account_key == '<ADDRESS>'",
	"solana.tx.program_keys.all(p, p == '11111111111111111111111111111111')",
	"solana.tx.transfers.any(t, t.to == 'ADDRESS_TABLE_LOOKUP') || solana.tx.spl_transfers.any(t, t.to == 'ADDRESS_TABLE_LOOKUP')",
	"tempo.tx.calls[0].function_signature == '0xa9059cbb'",
	"tron.tx.contract[0].type == 'TransferContract'",
	"true",
	"wallet_account.address == '<SIGNER_ADDRESS>' && tempo.tx.calls[0].input[34..74] == '<FROM_ADDRESS_NO_0x_PREFIX>' && tempo.tx.calls[0].input[98..138] == '<TO_ADDRESS_NO_0x_PREFIX>'",
	"approvers.any(u, u.id == '<TRADING_SERVICE_USER_ID>') && approvers.any(u, u.tags.contains('risk-admin'))",
	"approvers.any(user, user.tags.contains('<SECURITY_TAG_ID>') || user.tags.contains('<OPS_TAG_ID>')) && (approvers.filter(user, user.tags.contains('<SECURITY_TAG_ID>')).count() >= 1 && approvers.filter(user, user.tags.contains('<OPS_TAG_ID>')).count() >= 2)",
	"approvers.count() >= 2",
	"credentials.any(credential, credential.public_key == '<YOUR_CREDENTIAL_PUBLIC_KEY>')",
}

var docsTimeCorpus = []string{
	"CronSpan('0 22 * * *', '8h', 'America/New_York')",
	"CronSpan('0 9 * * 1-5', '8h', 'America/New_York') && time.now < Timestamp('2026-01-01T00:00:00Z')",
	"time.now >= Timestamp('2026-03-01T00:00:00Z') && time.now < Timestamp('2026-04-01T00:00:00Z')",
}

func TestDocsCorpusCompiles(t *testing.T) {
	for _, src := range docsCorpus {
		if _, err := Compile(src); err != nil {
			t.Errorf("Compile(%q): %v", src, err)
		}
	}
	for _, src := range docsTimeCorpus {
		if _, err := CompileTime(src); err != nil {
			t.Errorf("CompileTime(%q): %v", src, err)
		}
	}
}

// TestUnquotedPlaceholders: the docs write some placeholders without quotes
// (`o.address == <BITCOIN_ADDRESS>`). Filled in with a quoted string they
// compile; left as written they are a syntax error, not silently accepted.
func TestUnquotedPlaceholders(t *testing.T) {
	if _, err := Compile("bitcoin.tx.outputs.all(o, o.address == <BITCOIN_ADDRESS>)"); err == nil {
		t.Error("unfilled unquoted placeholder compiled")
	}
	for _, src := range []string{
		"bitcoin.tx.outputs.all(o, o.address == 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq')",
		"bitcoin.tx.inputs.all(i, i.tx_id == 'f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16' && i.vout == 0)",
		"approvers.any(user, user.id == '5f1c2a3b-1111-4a4a-9b9b-000000000001')",
		"solana.tx.instructions.count() == 1 && solana.tx.spl_transfers.count() == 1 && solana.tx.spl_transfers.all(transfer, transfer.amount < 1000000)",
	} {
		if _, err := Compile(src); err != nil {
			t.Errorf("Compile(%q): %v", src, err)
		}
	}
}
