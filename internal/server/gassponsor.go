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
	"github.com/latchkey/latchkey/internal/gasstation"
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
		Paused: s.chain.GasStation.IsPaused()}
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

// ReloadGasStation reads the gas-station file again and applies its kill switch (`paused`) to
// the running server: from then on every sponsored send is refused, or accepted again (serve
// calls it on SIGHUP). Only the switch changes without a restart: a file whose networks or
// limits differ is logged, and those changes wait for the next start. A file that fails to load
// changes nothing.
func (s *Server) ReloadGasStation() error {
	if s.cfg.GasStationFile == "" || s.chain == nil || s.chain.GasStation == nil {
		return nil
	}
	c, err := gasstation.LoadConfig(s.cfg.GasStationFile)
	if err != nil {
		return err
	}
	cur := s.chain.GasStation
	if !cur.SameNetworks(c) {
		s.Log.Warn("gas station: the file's networks or limits changed; only paused is applied without a restart",
			"file", s.cfg.GasStationFile)
	}
	if was := cur.IsPaused(); was != c.Paused {
		cur.SetPaused(c.Paused)
		s.Log.Warn(
			"gas station: sponsorship "+map[bool]string{true: "paused", false: "resumed"}[c.Paused]+" by the operator",
			"file",
			s.cfg.GasStationFile,
		)
	}
	return nil
}
