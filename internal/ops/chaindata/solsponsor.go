package chaindata

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"time"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/solana"
	"github.com/latchkey/latchkey/internal/gasstation"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

// Sponsored Solana sends (docs/gas-station.md, "Solana"): the deployment's fee payer becomes the
// transaction's first signer (solana.Sponsor), the caller's keys sign, then the fee payer; every
// signature is verified before the send is recorded. The most the send can cost the fee payer
// (fee, plus rent when it funds associated token accounts) is reserved against the
// organization's usage in the activity's transaction, and settled at what it cost once the
// follower reads the landed transaction (getTransaction: the fee payer's balance change).

// solFeePayer is the deployment's Solana fee payer key (custody.SponsorKeys).
type solFeePayer interface {
	FeePayerPublicKey() [32]byte
	SignFeePayer(message []byte) ([64]byte, error)
}

// KindSolSponsored is a sponsored Solana send's usage record; its id is the send's.
const (
	KindSolSponsored   = "sol_sponsored_send"
	keySolSponsoredSig = "sol_sponsored_send.signature"
	// keySolUnsettled marks the sponsored sends whose usage is still the reserved amount.
	keySolUnsettled = "sol_sponsored_send.unsettled"
	// solSettleAfter is how long a sponsored send that never landed is waited for: its blockhash
	// has expired long before (150 slots, about a minute), so it cannot land any more.
	solSettleAfter = 5 * time.Minute
)

// solSponsorship is what a sponsored send may cost and, once settled, what it cost.
type solSponsorship struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Caip2     string    `json:"caip2"`
	Signature string    `json:"signature"`
	FeePayer  string    `json:"feePayer"`
	Fee       uint64    `json:"feeLamports"`
	Rent      uint64    `json:"rentLamports"`
	Cost      uint64    `json:"costLamports,omitempty"`
	Settled   bool      `json:"settled,omitempty"`
	CreatedAt time.Time `json:"createdAt"`

	net *gasstation.SolanaNetwork
	fp  solFeePayer
}

func (s *solSponsorship) keys() []store.Key {
	ks := []store.Key{{Name: keySolSponsoredSig, Value: s.Signature}}
	if !s.Settled {
		ks = append(ks, store.Key{Name: keySolUnsettled, Value: "1"})
	}
	return ks
}

// sponsorSol rewrites tx for the fee payer, within the operator's caps.
func (d *Deps) sponsorSol(x *activity.Exec, caip2 string, tx *solana.Tx) ([]byte, *solSponsorship, error) {
	net, err := d.GasStation.SolanaNetwork(caip2)
	if err != nil {
		return nil, nil, err
	}
	fp := d.solFeePayer()
	if fp == nil {
		return nil, nil, apierr.New(apierr.FailedPrecondition, gasstation.CodeNotSponsored,
			"this deployment has no Solana fee payer key; send with sponsor false")
	}
	payer := fp.FeePayerPublicKey()
	rent := false
	if net.RentSponsorship { // and the organization's solanaConfig.rentPrefundEnabled
		billing, err := gasstation.BillingOrg(x.Ctx, x.Tx, x.OrgID)
		if err != nil {
			return nil, nil, err
		}
		c, err := gasstation.LoadUsageConfig(x.Ctx, x.Tx, billing)
		if err != nil {
			return nil, nil, err
		}
		rent = c != nil && c.RentPrefund
	}
	const f = "parameters.unsignedTransaction"
	sp, err := solana.Sponsor(tx, payer, rent)
	if err != nil {
		return nil, nil, apierr.Invalid(f, "%v", err)
	}
	if sp.Fee > net.MaxFeeLamports {
		return nil, nil, apierr.Invalid(f,
			"the transaction's fee is up to %d lamports (signatures and priority fee), above this network's "+
				"sponsorship cap of %d", sp.Fee, net.MaxFeeLamports)
	}
	return sp.Unsigned, &solSponsorship{OrgID: x.OrgID, Caip2: caip2, FeePayer: base58.Encode(payer[:]),
		Fee: sp.Fee, Rent: sp.Rent, CreatedAt: x.Now, net: net, fp: fp}, nil
}

// signSponsored adds the fee payer's signature to a transaction the caller's keys signed, then
// verifies every signature: nothing is sent that the network would refuse as unsigned.
func (d *Deps) signSponsored(_ *activity.Exec, sp *solSponsorship, raw []byte) ([]byte, error) {
	tx, err := solana.ParseTransaction(raw)
	if err != nil {
		return nil, apierr.Internalf(err, "reading the signed transaction")
	}
	sig, err := sp.fp.SignFeePayer(tx.Message())
	if err != nil {
		return nil, apierr.Internalf(err, "signing with the fee payer")
	}
	if raw, err = tx.WithSignature(0, sig[:]); err != nil {
		return nil, apierr.Internalf(err, "placing the fee payer's signature")
	}
	if tx, err = solana.ParseTransaction(raw); err != nil {
		return nil, apierr.Internalf(err, "reading the signed transaction")
	}
	if err := tx.VerifySignatures(); err != nil {
		return nil, apierr.Invalid("parameters.signWiths",
			"%v: a sponsored transaction is sent with every required signer's signature; list each in signWiths", err)
	}
	return raw, nil
}

// reserveSponsored counts the most the send can cost against the organization's usage, in the
// activity's transaction, and keeps the record the settlement reads.
func (d *Deps) reserveSponsored(x *activity.Exec, sp *solSponsorship, s *Send) error {
	sp.ID, sp.Signature = s.ID, s.TxHash
	usd := gasstation.USD(sp.net.Price, new(big.Int).SetUint64(sp.Fee+sp.Rent), 9)
	if err := gasstation.Reserve(x.Ctx, x.Tx, x.OrgID, sp.Caip2, sp.ID, usd, x.Now); err != nil {
		return err
	}
	return records.Save(x.Ctx, x.Tx, KindSolSponsored, sp.ID, sp.OrgID, sp.CreatedAt, sp.CreatedAt, sp, sp.keys()...)
}

// solLanded is what getTransaction says of a landed transaction (json encoding).
type solLanded struct {
	Slot      uint64 `json:"slot"`
	BlockTime *int64 `json:"blockTime"`
	Meta      *struct {
		Err          json.RawMessage `json:"err"`
		Fee          uint64          `json:"fee"`
		PreBalances  []uint64        `json:"preBalances"`
		PostBalances []uint64        `json:"postBalances"`
	} `json:"meta"`
}

// settleSolana settles the usage of the sponsored sends the network has decided: what the fee
// payer's balance lost (fee and rent) once the transaction landed, nothing when it was refused
// or never landed. Every process may run it: a send is settled once, in a transaction that
// re-reads its record.
func (d *Deps) settleSolana(ctx context.Context) int {
	var refs []store.Ref
	if err := d.Store.View(ctx, func(r store.Reader) (err error) {
		refs, err = r.Lookup(ctx, keySolUnsettled, "1")
		return err
	}); err != nil {
		return 0
	}
	done := 0
	for _, ref := range refs {
		var sp *solSponsorship
		var send *Send
		if err := d.Store.View(ctx, func(r store.Reader) (err error) {
			if sp, err = records.Load[solSponsorship](ctx, r, KindSolSponsored, "", ref.ID, "sponsored send"); err != nil {
				return err
			}
			send, err = records.Load[Send](ctx, r, KindSend, "", ref.ID, "send")
			return err
		}); err != nil || sp.Settled {
			continue
		}
		cost, ok, err := d.solCost(ctx, sp, send)
		if err != nil || !ok {
			continue
		}
		err = d.Store.Update(ctx, func(tx store.Tx) error {
			cur, err := records.Load[solSponsorship](ctx, tx, KindSolSponsored, "", sp.ID, "sponsored send")
			if err != nil || cur.Settled {
				return err
			}
			now := time.Now().UTC()
			cur.Settled, cur.Cost = true, cost
			if err := records.Save(ctx, tx, KindSolSponsored, cur.ID, cur.OrgID, cur.CreatedAt, now, cur,
				cur.keys()...); err != nil {
				return err
			}
			var price *big.Rat
			if n, err := d.GasStation.SolanaNetwork(cur.Caip2); err == nil {
				price = n.Price
			} else if d.GasStation != nil && d.GasStation.Solana[cur.Caip2] != nil { // paused since
				price = d.GasStation.Solana[cur.Caip2].Price
			}
			return gasstation.Settle(ctx, tx, cur.ID, gasstation.USD(price, new(big.Int).SetUint64(cost), 9), now)
		})
		if err == nil {
			done++
		} else if d.Log != nil {
			d.Log.Warn("chaindata: settling a sponsored Solana send", "network", sp.Caip2, "err", err)
		}
	}
	return done
}

// solCost reads what a sponsored send cost the fee payer; ok is false while that is not known.
func (d *Deps) solCost(ctx context.Context, sp *solSponsorship, send *Send) (cost uint64, ok bool, err error) {
	if send.BroadcastError != "" {
		return 0, true, nil // the node refused it: nothing was charged
	}
	c, err := d.provider(sp.Caip2)
	if err != nil {
		return 0, false, err
	}
	var landed *solLanded
	err = c.Call(ctx, "getTransaction", []any{sp.Signature, map[string]any{"encoding": "json",
		"commitment": "confirmed", "maxSupportedTransactionVersion": 0}}, &landed)
	if err != nil {
		return 0, false, err
	}
	if landed == nil || landed.Meta == nil {
		if time.Since(sp.CreatedAt) > solSettleAfter {
			return 0, true, nil // its blockhash expired: it can no longer land
		}
		return 0, false, nil
	}
	m := landed.Meta
	if len(m.PreBalances) == 0 || len(m.PostBalances) == 0 {
		return 0, false, errors.New("getTransaction answered no balances")
	}
	cost = m.Fee
	if pre, post := m.PreBalances[0], m.PostBalances[0]; pre > post {
		cost = pre - post // the fee payer is account 0: its loss is the fee and any rent it funded
	}
	return cost, true, nil
}

// solFeePayer is the deployment's fee payer, nil without sponsor keys.
func (d *Deps) solFeePayer() solFeePayer {
	if d.Sponsor == nil {
		return nil
	}
	return d.Sponsor
}

// SettleSolanaOnce runs one settlement pass (Follow runs it every FollowEvery); for tests and tools.
func (d *Deps) SettleSolanaOnce(ctx context.Context) int { return d.settleSolana(ctx) }
