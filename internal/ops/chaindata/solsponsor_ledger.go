package chaindata

// TEMPORARY until the usage branch is merged (then: d.Sponsor and gasstation.Reserve/Settle).

import (
	"context"
	"math/big"
	"time"

	"github.com/latchkey/latchkey/internal/store"
)

func (d *Deps) solFeePayer() solFeePayer { return testFeePayer }

var testFeePayer solFeePayer

func reserveUsage(context.Context, store.Tx, string, string, string, *big.Rat, time.Time) error {
	return nil
}

func settleUsage(context.Context, store.Tx, string, *big.Rat, time.Time) error { return nil }
