package server

import "github.com/latchkey/latchkey/internal/ops/chaindata"

// What the external tests (package server_test) read of the package's internals.
var (
	NotSupported        = notSupported
	EngineOps           = engineOps
	CheckCoordinatorURL = checkCoordinatorURL
)

// ChainDeps is the chain-data dependencies the server assembled (its nodes, caches, followers).
func (s *Server) ChainDeps() *chaindata.Deps { return s.chain }

// GasStationFile is the --gas-station file the server was started with.
func (s *Server) GasStationFile() string { return s.cfg.GasStationFile }
