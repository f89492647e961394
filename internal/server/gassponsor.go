package server

import (
	"context"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/ops/chaindata"
)

// SponsorBalanceEvery is how often the sponsor accounts' balances are read (metrics
// latchkey_gas_sponsor_balance and latchkey_gas_sponsor_low, the health page's warning).
var SponsorBalanceEvery = time.Minute

// sponsorBalances holds the last balances read, for the health page.
type sponsorBalances struct {
	last atomic.Pointer[[]chaindata.SponsorBalance]
}

// watchSponsorBalances reads the sponsor balances now and every period until ctx ends, outside
// any transaction. Nothing is read when the gas-station file names no network.
func (s *Server) watchSponsorBalances(ctx context.Context, every time.Duration) {
	if g := s.chain.GasStation; g == nil || len(g.EVM)+len(g.Solana) == 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.readSponsorBalances(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Server) readSponsorBalances(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	bs := s.chain.SponsorBalances(rctx, time.Now().UTC())
	for _, b := range bs {
		if b.Err != nil {
			s.Log.Warn("gas station: the sponsor balance could not be read", "network", b.Network, "err", b.Err)
			continue
		}
		f, _ := new(big.Float).SetInt(b.Balance).Float64()
		s.Metrics.SponsorBalance(b.Network, b.Address, f, b.Low)
		if b.Low {
			s.Log.Warn("gas station: the sponsor balance is low: fund it", "network", b.Network, "address", b.Address,
				"balance", b.Balance.String(), "threshold", b.Threshold.String())
		}
	}
	s.sponsor.last.Store(&bs)
}

// gasStationHealth is the health page's gas station section.
func (s *Server) gasStationHealth() dashboard.GasStation {
	a := s.chain.Sponsor.Addresses()
	g := dashboard.GasStation{Paymaster: a.EVMPaymaster, FeePayer: a.SolanaFeePayer,
		Paused: s.chain.GasStation != nil && s.chain.GasStation.Paused}
	read := map[string]chaindata.SponsorBalance{}
	if p := s.sponsor.last.Load(); p != nil {
		for _, b := range *p {
			read[b.Network] = b
		}
	}
	row := func(network, address string, threshold fmt.Stringer) {
		r := dashboard.GasSponsor{Network: network, Address: address, Threshold: threshold.String()}
		if b, ok := read[network]; ok {
			r.CheckedAt, r.Low = b.CheckedAt, b.Low
			if b.Err != nil {
				r.Error = b.Err.Error()
			} else {
				r.Balance = b.Balance.String()
			}
		}
		g.Networks = append(g.Networks, r)
	}
	if c := s.chain.GasStation; c != nil {
		for _, n := range slices.Sorted(maps.Keys(c.EVM)) {
			row(n, a.EVMPaymaster, c.EVM[n].LowBalance)
		}
		for _, n := range slices.Sorted(maps.Keys(c.Solana)) {
			row(n, a.SolanaFeePayer, new(big.Int).SetUint64(c.Solana[n].LowBalanceLamports))
		}
	}
	return g
}
