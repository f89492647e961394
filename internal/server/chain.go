package server

import (
	"net/http"
	"time"

	"github.com/latchkey/latchkey/internal/chain/rpc"
	"github.com/latchkey/latchkey/internal/gasstation"
	"github.com/latchkey/latchkey/internal/ops/chaindata"
)

// newChainDeps makes the chain providers' clients and loads the asset list.
func newChainDeps(cfg Config, onError func(network string)) (*chaindata.Deps, error) {
	catalog, err := chaindata.LoadCatalog(cfg.AssetsFile)
	if err != nil {
		return nil, err
	}
	prices, err := chaindata.LoadPrices(cfg.PricesFile)
	if err != nil {
		return nil, err
	}
	gas, err := gasstation.LoadConfig(cfg.GasStationFile)
	if err != nil {
		return nil, err
	}
	providers := map[string]*rpc.Client{}
	for network, url := range cfg.ChainRPC {
		providers[chaindata.Canonical(network)] = &rpc.Client{Network: chaindata.Canonical(network), URL: url,
			HTTP: &http.Client{Timeout: 10 * time.Second}, OnError: onError}
	}
	d := chaindata.NewDeps(providers, catalog, cfg.BalanceCacheTTL)
	d.Prices = prices
	d.GasStation = gas
	return d, nil
}
