package wallets

import (
	"encoding/hex"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/ops/policies"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/wire"
)

// keyEnv is what a policy condition sees of the key an activity uses: wallet and
// wallet_account for a wallet account, private_key for a private key (language.mdx keywords).
func keyEnv(x *activity.Exec, k *SigningKey) map[string]policy.Value {
	env := map[string]policy.Value{}
	r := x.Shared() // read, never written here: no row locks
	switch k.Kind {
	case KindAccount:
		if a, err := load[Account](x.Ctx, r, KindAccount, x.OrgID, k.ID, "wallet account"); err == nil {
			env["wallet_account"] = policy.Map{"address": policy.String(a.Address)}
		}
		if w, err := load[Wallet](x.Ctx, r, KindWallet, x.OrgID, k.WalletID, "wallet"); err == nil {
			env["wallet"] = walletValue(w)
		}
	case KindPrivateKey:
		if pk, err := load[PrivateKey](x.Ctx, r, KindPrivateKey, x.OrgID, k.ID, "private key"); err == nil {
			tags, _ := lookupIDs(x.Ctx, r, KeyPKTagMember, pk.ID, KindPrivateKeyTag, x.OrgID)
			tl := make(policy.List, 0, len(tags))
			for _, t := range tags {
				tl = append(tl, policy.String(t))
			}
			env["private_key"] = policy.Map{
				"id":       policy.String(pk.ID),
				"tags":     tl,
				"imported": policy.Bool(pk.Imported),
				"exported": policy.Bool(pk.Exported),
				"label":    policy.String(pk.Name),
			}
		}
	}
	return env
}

func walletValue(w *Wallet) policy.Value {
	return policy.Map{
		"id":       policy.String(w.ID),
		"imported": policy.Bool(w.Imported),
		"exported": policy.Bool(w.Exported),
		"label":    policy.String(w.Name),
	}
}

// signedEnv exposes the key and the parsed payload of a signing activity (parsed in Prepare).
func signedEnv(x *activity.Exec, _ any) map[string]policy.Value {
	s, ok := x.Prepared.(signed)
	if !ok {
		return nil
	}
	env := keyEnv(x, s.key)
	if v := s.view; v != nil {
		env[v.chain] = policy.Lazy(func() (policy.Value, error) { return v.value(x), nil })
	}
	return env
}

// chainView is a parsed payload's policy view (eth.tx, eth.eip_712, solana.tx ...), built only
// when a policy reads its keyword: a root user's signature, or one whose policies read only
// the key, never pays for the view of a large transaction or typed data.
type chainView struct {
	chain, field string
	build        func() map[string]any
}

// value builds the view; eth.tx gains the decoded contract call.
func (v *chainView) value(x *activity.Exec) policy.Value {
	view := v.build()
	if view == nil {
		return policy.Null{}
	}
	inner, _ := policy.FromGo(view).(policy.Map)
	if v.chain == "eth" && v.field == "tx" {
		addContractCall(x, inner)
	}
	return policy.Map{v.field: inner}
}

// addContractCall decodes eth.tx.data with the ABI registered for eth.tx.to (a smart contract
// interface), adding function_name, function_signature and contract_call_args; without one
// those fields stay absent, as the docs say.
func addContractCall(x *activity.Exec, tx policy.Map) {
	to, _ := tx["to"].(policy.String)
	data, _ := tx["data"].(policy.String)
	if to == "" || len(data) < 10 {
		return
	}
	raw, err := hex.DecodeString(strings.TrimPrefix(string(data), "0x"))
	if err != nil {
		return
	}
	// Parsed once per interface and kept (policies.ContractABI), not on every request.
	parsed, err := policies.ContractABI(x.Ctx, x.R, x.OrgID, string(to))
	if err != nil || parsed == nil {
		return
	}
	call, err := parsed.DecodeCall(raw)
	if err != nil {
		return
	}
	tx["function_name"] = policy.String(call.Name)
	tx["function_signature"] = policy.String(call.Signature)
	tx["contract_call_args"] = policy.FromGo(call.Args)
}

// exportEnv exposes the wallet, account or private key an export reads.
func exportEnv(x *activity.Exec, intent any) map[string]policy.Value {
	switch in := intent.(type) {
	case *wire.ExportWalletIntent:
		if w, err := load[Wallet](x.Ctx, x.R, KindWallet, x.OrgID, in.WalletId, "wallet"); err == nil {
			return map[string]policy.Value{"wallet": walletValue(w)}
		}
	case *wire.ExportWalletAccountIntent:
		if k, err := ResolveSigner(x.Ctx, x.R, x.OrgID, in.Address); err == nil {
			return keyEnv(x, k)
		}
	case *wire.ExportPrivateKeyIntent:
		if pk, err := load[PrivateKey](x.Ctx, x.R, KindPrivateKey, x.OrgID, in.PrivateKeyId, "private key"); err == nil {
			return keyEnv(x, privKey(pk, ""))
		}
	}
	return nil
}
