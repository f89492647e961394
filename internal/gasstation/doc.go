// Package gasstation is the operator's side of gas sponsorship: the configuration that turns it
// on per network (the EVM delegate, caps, prices, the kill switch) and, beside it, the USD
// accounting that enforces each organization's limits.
//
// Sponsorship is off until the operator writes a gas-station file (--gas-station FILE, JSON,
// docs/gas-station.md "Operator configuration") naming at least one network; a request asking for
// sponsorship anywhere else is refused with ErrNotSponsored's reason, not answered 501.
//
// The package does no network I/O: the start-up check of a delegate's eip712Domain() belongs to
// the caller that has the network's provider (internal/chain/ethereum.CheckDelegate decodes it).
package gasstation
