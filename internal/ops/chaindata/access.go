package chaindata

import (
	"context"
	"errors"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

// Beta features an operator grants per organization (the spec: "a beta feature that requires
// access to be granted"); a parent's grant covers its sub-organizations.
const (
	KindGrant             = "operator_grant"
	FeatureWalletBalances = "wallet-balances"
)

// Features are the features that can be granted.
var Features = []string{FeatureWalletBalances}

// Grant is one granted feature.
type Grant struct {
	OrgID     string    `json:"orgId"`
	Feature   string    `json:"feature"`
	GrantedAt time.Time `json:"grantedAt"`
}

func grantID(orgID, feature string) string { return orgID + "/" + feature }

func checkFeature(f string) error {
	for _, k := range Features {
		if k == f {
			return nil
		}
	}
	return apierr.Invalid("feature", "unknown feature %q (known: wallet-balances)", f)
}

// SetGrant grants (on) or revokes (off) feature to an organization.
func SetGrant(ctx context.Context, st store.Store, orgID, feature string, on bool, now time.Time) error {
	if err := checkFeature(feature); err != nil {
		return err
	}
	return st.Update(ctx, func(tx store.Tx) error {
		if _, err := directory.LoadOrganization(ctx, tx, orgID); err != nil {
			return err
		}
		if !on {
			err := records.Delete(ctx, tx, KindGrant, grantID(orgID, feature))
			if apierr.From(err).Code == apierr.NotFound {
				return nil
			}
			return err
		}
		return records.Save(
			ctx,
			tx,
			KindGrant,
			grantID(orgID, feature),
			orgID,
			now,
			now,
			Grant{OrgID: orgID, Feature: feature, GrantedAt: now},
		)
	})
}

// Granted reports whether org (or its parent) has feature.
func Granted(ctx context.Context, r store.Reader, org *directory.Organization, feature string) (bool, error) {
	for _, id := range []string{org.ID, org.ParentID} {
		if id == "" {
			continue
		}
		_, err := r.Get(ctx, KindGrant, grantID(id, feature))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return false, apierr.Internalf(err, "reading grants")
		}
	}
	return false, nil
}
