package server

import (
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/hot"
	"github.com/latchkey/latchkey/internal/ops/mfa"
	"github.com/latchkey/latchkey/internal/ops/wallets"
	"github.com/latchkey/latchkey/internal/store"
)

// hotKinds are the record kinds held in memory between requests (package hot): what caller
// resolution and the signing path read.
var hotKinds = []string{directory.KindOrganization, directory.KindUser, directory.KindAPIKey,
	wallets.KindWallet, wallets.KindAccount, wallets.KindPrivateKey, mfa.KindMFAPolicy}

// hotStore puts st behind the write tracking that keeps the in-memory records exact, and
// starts watching other processes' writes (stopped by the store's Close).
func (s *Server) hotStore(st store.Store) store.Store {
	s.Hot = hot.NewVersions()
	hs := hot.Wrap(st, s.Hot, hotKinds...)
	hs.Watch()
	return hs
}
