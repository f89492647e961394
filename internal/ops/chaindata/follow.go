package chaindata

import (
	"context"
	"encoding/json"
	"math/big"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/gasstation"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/webhooks"
	"github.com/latchkey/latchkey/internal/wire"
)

// FollowEvery is how often Follow asks the nodes about the sends still in flight.
const FollowEvery = 2 * time.Second

// statusEvent queues a SEND_TRANSACTION_STATUS_UPDATES delivery of a send's new status, in tx,
// for the endpoints of the top-level ("billing") organization of the send's organization, with
// the body Turnkey sends ("transaction:status").
func (d *Deps) statusEvent(
	ctx context.Context,
	tx store.Tx,
	s *Send,
	status string,
	txErr *wire.TxError,
	now time.Time,
) error {
	org, err := directory.LoadOrganization(ctx, tx, s.OrgID)
	if err != nil {
		return err
	}
	billing := org
	if org.ParentID != "" {
		if billing, err = directory.LoadOrganization(ctx, tx, org.ParentID); err != nil {
			return err
		}
	}
	if billing.WebhookEndpoints == 0 {
		return nil
	}
	msg := map[string]any{
		"sendTransactionStatusId": s.ID,
		"activityId":              s.ActivityID,
		"status":                  status,
		"caip2":                   s.Caip2,
		"idempotencyKey":          s.ID + ":" + status,
		"timestamp":               strconv.FormatInt(now.Unix(), 10),
	}
	if status == StatusIncluded {
		msg["txHash"] = s.TxHash
	}
	if txErr != nil {
		msg["error"] = txErr
	}
	body, err := json.Marshal(
		map[string]any{
			"type":                 "transaction:status",
			"organizationId":       s.OrgID,
			"parentOrganizationId": billing.ID,
			"msg":                  msg,
		},
	)
	if err != nil {
		return err
	}
	return webhooks.EnqueueEvent(ctx, tx, billing, webhooks.EventSendStatusUpdates, now, body)
}

// Follow asks the nodes, until ctx ends, about every send whose final status is not known, and
// records (and reports to SEND_TRANSACTION_STATUS_UPDATES endpoints) INCLUDED or FAILED once;
// and follows new blocks for balance updates (balancefollow.go).
// Every process may run it: the final status is written once, in a transaction that re-reads
// the send.
func (d *Deps) Follow(ctx context.Context, wake func()) {
	t := time.NewTicker(FollowEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d.followPaymaster(ctx)
		if d.followOnce(ctx)+d.followBalances(ctx) > 0 && wake != nil {
			wake()
		}
		d.settleSolana(ctx) // sponsored Solana sends' usage (solsponsor.go); nothing to wake
	}
}

func (d *Deps) followOnce(ctx context.Context) int {
	var refs []store.Ref
	if err := d.Store.View(ctx, func(r store.Reader) (err error) {
		refs, err = r.Lookup(ctx, keySendFollowed, "1")
		return err
	}); err != nil {
		return 0
	}
	done := 0
	for _, ref := range refs {
		var s *Send
		if err := d.Store.View(ctx, func(r store.Reader) (err error) {
			s, err = records.Load[Send](ctx, r, KindSend, "", ref.ID, "send")
			return err
		}); err != nil || s.Final != "" {
			continue
		}
		st, rc, err := d.finalStatus(ctx, s)
		if err != nil || st.TxStatus == StatusPending {
			if err == nil && s.Sponsored {
				d.rebroadcast(ctx, s)
			}
			continue
		}
		err = d.Store.Update(ctx, func(tx store.Tx) error {
			cur, err := records.Load[Send](ctx, tx, KindSend, "", s.ID, "send")
			if err != nil || cur.Final != "" {
				return err
			}
			now := time.Now().UTC()
			cur.Final = st.TxStatus
			if err := records.Save(ctx, tx, KindSend, cur.ID, cur.OrgID, cur.CreatedAt, now, cur, cur.keys()...); err != nil {
				return err
			}
			if cur.Sponsored {
				if err := gasstation.Settle(ctx, tx, cur.ID, d.charged(cur, rc), now); err != nil {
					return err
				}
			}
			return d.statusEvent(ctx, tx, cur, st.TxStatus, st.Error, now)
		})
		if err == nil {
			done++
		} else if d.Log != nil {
			d.Log.Warn("chaindata: recording a send's status", "network", s.Caip2, "err", err)
		}
	}
	return done
}

// finalStatus is chainStatus with the receipt of an EVM send (nil otherwise, or while pending).
func (d *Deps) finalStatus(ctx context.Context, s *Send) (wire.GetSendTransactionStatusResponse, *sendReceipt, error) {
	if s.BroadcastError != "" || isSolana(s.Caip2) {
		st, err := d.chainStatus(ctx, s)
		return st, nil, err
	}
	c, err := d.provider(s.Caip2)
	if err != nil {
		return wire.GetSendTransactionStatusResponse{}, nil, err
	}
	return evmStatus(ctx, c, s)
}

// charged is what an included sponsored send cost the paymaster, in USD: gasUsed ×
// effectiveGasPrice at the network's configured price ($0 when the network is no longer
// configured).
func (d *Deps) charged(s *Send, rc *sendReceipt) *big.Rat {
	if rc == nil {
		return new(big.Rat)
	}
	cfg, err := d.GasStation.EVMNetwork(s.Caip2)
	if err != nil && d.GasStation != nil && d.GasStation.EVM[s.Caip2] != nil {
		cfg = d.GasStation.EVM[s.Caip2] // paused since: the usage still counts
	}
	if cfg == nil {
		return new(big.Rat)
	}
	wei := new(big.Int).Mul(rc.GasUsed.ToInt(), rc.EffectiveGasPrice.ToInt())
	return gasstation.USD(cfg.Price, wei, 18)
}
