package wallets

import (
	"encoding/hex"
	"errors"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/apierr"
)

func hexLower(b []byte) string { return hex.EncodeToString(b) }

func sortAccounts(as []*Account) {
	slices.SortFunc(as, func(a, b *Account) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

func asAPIErr(err error, target **apierr.Error) bool { return errors.As(err, target) }
