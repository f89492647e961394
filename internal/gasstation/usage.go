package gasstation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

// The usage ledger (docs/gas-station.md, "Limits and usage"). Amounts are counted in integer
// micro-dollars (1 USD = 1,000,000): a cost given as a big.Rat is rounded up to the next
// micro-dollar, so rounding never lets usage pass a limit unseen.
//
// An organization's configuration is one record per billing organization (the top-level one:
// a sub-organization's parent), set by ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG. Every sponsored
// send is one entry, owned by the billing organization and keyed by the organization that sent
// it; an entry counts at the time it was reserved, and the usage of a window is the sum of the
// entries reserved after now - window. Reserve serialises on the billing organization
// (store.Tx.Lock), so two sends racing cannot both pass a limit only one of them fits.
const (
	// KindUsageConfig is an organization's gas usage configuration (ID: the organization's id).
	KindUsageConfig = "gas_usage_config"
	// KindUsageEntry is one sponsored send's cost (ID: the send's id).
	KindUsageEntry = "gas_usage_entry"
	// keyUsageOrg carries the organization (sub-organization or billing) that sent the entry.
	keyUsageOrg = "gas_usage_entry.org"

	// MaxWindowMinutes is the longest window (30 days), as on Turnkey.
	MaxWindowMinutes = 43200
	// maxLimitMicros bounds a limit: one billion dollars.
	maxLimitMicros = 1_000_000_000 * microsPerUSD
	microsPerUSD   = 1_000_000
	// usagePage is how many entries one read of a window takes.
	usagePage = 500
	// keepEntries is how long an entry is kept: the longest window and a day. Each Reserve
	// deletes up to pruneEntries older ones, so the ledger stays bounded by a month's sends.
	keepEntries  = MaxWindowMinutes*time.Minute + 24*time.Hour
	pruneEntries = 8
)

// Refusal reasons (TurnkeyCode) of Reserve.
const (
	// CodeLimitExceeded: the send would take the usage of a window past a limit.
	CodeLimitExceeded = "GAS_USAGE_LIMIT_EXCEEDED"
	// CodeNotEnabled: the organization has no gas usage configuration, or it is not enabled.
	CodeNotEnabled = "GAS_SPONSORSHIP_NOT_ENABLED"
)

// UsageConfig is an organization's gas sponsorship configuration.
type UsageConfig struct {
	ID      string `json:"id"` // gasUsageConfigId
	OrgID   string `json:"orgId"`
	Enabled bool   `json:"enabled"`
	// OrgLimitMicros bounds the usage of the billing organization with all its
	// sub-organizations over a window; SubOrgLimitMicros that of each sub-organization.
	OrgLimitMicros    int64 `json:"orgLimitMicros"`
	SubOrgLimitMicros int64 `json:"subOrgLimitMicros"`
	WindowMinutes     int32 `json:"windowMinutes"`
	// RentPrefund is solanaConfig.rentPrefundEnabled: sponsored Solana transactions may create
	// accounts whose rent the fee payer pays (the operator's rentSponsorship must allow it too).
	RentPrefund bool      `json:"rentPrefund,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// Window is the configuration's window.
func (c *UsageConfig) Window() time.Duration { return time.Duration(c.WindowMinutes) * time.Minute }

type usageEntry struct {
	OrgID   string `json:"orgId"`
	CAIP2   string `json:"caip2"`
	Micros  int64  `json:"micros"`
	Settled bool   `json:"settled,omitempty"`
}

// BillingOrg returns the organization whose configuration and organization-wide limit apply to
// orgID: its parent, or itself when it is a top-level organization.
func BillingOrg(ctx context.Context, r store.Reader, orgID string) (string, error) {
	o, err := directory.LoadOrganization(ctx, r, orgID)
	if err != nil {
		return "", err
	}
	if o.ParentID != "" {
		return o.ParentID, nil
	}
	return o.ID, nil
}

// LoadUsageConfig reads the configuration of the billing organization billingID; nil when it has
// none (sponsorship not enabled).
func LoadUsageConfig(ctx context.Context, r store.Reader, billingID string) (*UsageConfig, error) {
	rec, err := r.Get(ctx, KindUsageConfig, billingID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Internalf(err, "reading the gas usage config")
	}
	c := new(UsageConfig)
	if err := json.Unmarshal(rec.Data, c); err != nil {
		return nil, apierr.Internalf(err, "decoding the gas usage config")
	}
	return c, nil
}

func saveUsageConfig(ctx context.Context, tx store.Tx, c *UsageConfig) error {
	return records.Save(ctx, tx, KindUsageConfig, c.OrgID, c.OrgID, c.CreatedAt, c.UpdatedAt, c)
}

// Micros converts a USD amount to micro-dollars, rounding up; negative amounts are 0 and
// amounts past math.MaxInt64 micro-dollars are MaxInt64.
func Micros(usd *big.Rat) int64 {
	if usd == nil || usd.Sign() <= 0 {
		return 0
	}
	n := new(big.Int).Mul(usd.Num(), big.NewInt(microsPerUSD))
	q, m := new(big.Int).QuoRem(n, usd.Denom(), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return q.Int64()
}

// FormatUSD writes micro-dollars as a decimal string with at least two decimals ("1.50",
// "0.000125").
func FormatUSD(micros int64) string {
	neg := micros < 0
	u := uint64(micros)
	if neg {
		u = uint64(-micros)
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", u%microsPerUSD), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	s := strconv.FormatUint(u/microsPerUSD, 10) + "." + frac
	if neg {
		s = "-" + s
	}
	return s
}

// ParseUSD reads a non-negative USD amount of at most six decimals ("25", "0.5", "12.345678").
func ParseUSD(s string) (int64, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(whole) > 10 || len(frac) > 6 || strings.Trim(whole, "0123456789") != "" ||
		strings.Trim(frac, "0123456789") != "" || (strings.Contains(s, ".") && frac == "") {
		return 0, errors.New("a non-negative decimal amount of USD with at most 6 decimals is required")
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	v := w*microsPerUSD + f
	if v > maxLimitMicros {
		return 0, fmt.Errorf("at most %s USD", FormatUSD(maxLimitMicros))
	}
	return v, nil
}

// windowUsage sums the entries of billingID reserved after since: every entry, or only orgID's
// when orgID is not empty.
func windowUsage(ctx context.Context, r store.Reader, billingID, orgID string, since time.Time) (int64, error) {
	opts := store.ListOptions{Desc: true, Limit: usagePage}
	if orgID != "" {
		opts.Key = store.Key{Name: keyUsageOrg, Value: orgID}
	}
	var sum int64
	for {
		recs, err := r.List(ctx, KindUsageEntry, billingID, opts)
		if err != nil {
			return 0, apierr.Internalf(err, "reading the gas usage")
		}
		for _, rec := range recs {
			if !rec.CreatedAt.After(since) {
				return sum, nil
			}
			var e usageEntry
			if err := json.Unmarshal(rec.Data, &e); err != nil {
				return 0, apierr.Internalf(err, "decoding a gas usage entry")
			}
			if sum > math.MaxInt64-e.Micros {
				return math.MaxInt64, nil
			}
			sum += e.Micros
		}
		if len(recs) < usagePage {
			return sum, nil
		}
		opts.After = recs[len(recs)-1].ID
	}
}

// Usage is an organization's usage of its window as get_gas_usage answers it.
type Usage struct {
	WindowMinutes int32
	LimitMicros   int64
	UsageMicros   int64
	// Configured is false when the billing organization has no configuration (all zero).
	Configured bool
}

// UsageOf reads orgID's usage: a sub-organization's own usage against the per-sub-organization
// limit, or the billing organization's usage with all its sub-organizations against the
// organization-wide limit.
func UsageOf(ctx context.Context, r store.Reader, orgID string, now time.Time) (Usage, error) {
	billing, err := BillingOrg(ctx, r, orgID)
	if err != nil {
		return Usage{}, err
	}
	c, err := LoadUsageConfig(ctx, r, billing)
	if err != nil || c == nil {
		return Usage{}, err
	}
	u := Usage{WindowMinutes: c.WindowMinutes, LimitMicros: c.OrgLimitMicros, Configured: true}
	of := ""
	if billing != orgID {
		u.LimitMicros, of = c.SubOrgLimitMicros, orgID
	}
	u.UsageMicros, err = windowUsage(ctx, r, billing, of, now.Add(-c.Window()))
	return u, err
}

func notEnabled(billing string, c *UsageConfig) error {
	why := "has no gas usage configuration"
	if c != nil {
		why = "has gas sponsorship disabled"
	}
	return apierr.New(
		apierr.FailedPrecondition,
		CodeNotEnabled,
		"gas sponsorship is not enabled: the billing organization %s %s "+
			"(a root user of it submits upsert_gas_usage_config with enabled true and its limits); send with sponsor false",
		billing,
		why,
	)
}

func limitExceeded(which string, c *UsageConfig, limit, usage, estimate int64) error {
	return apierr.New(
		apierr.FailedPrecondition,
		CodeLimitExceeded,
		"gas usage limit exceeded: the %s limit of $%s per %d-minute window would be passed "+
			"(usage $%s in the window, this transaction up to $%s)",
		which,
		FormatUSD(limit),
		c.WindowMinutes,
		FormatUSD(usage),
		FormatUSD(estimate),
	)
}

// Reserve counts an estimate against orgID's limits inside the activity's write transaction;
// it refuses (apierr FailedPrecondition, TurnkeyCode GAS_USAGE_LIMIT_EXCEEDED, message naming
// the limit, the window and the usage) when the estimate would pass the sub-organization's or
// the billing (top-level) organization's window limit, and (TurnkeyCode
// GAS_SPONSORSHIP_NOT_ENABLED) when the billing organization's configuration is missing or not
// enabled. ref is the send's id: one reservation per send.
func Reserve(ctx context.Context, tx store.Tx, orgID, caip2, ref string, usd *big.Rat, now time.Time) error {
	if ref == "" {
		return apierr.Internalf(errors.New("empty reference"), "reserving gas usage")
	}
	billing, err := BillingOrg(ctx, tx.NoLock(), orgID)
	if err != nil {
		return err
	}
	// Every reservation of the billing organization and its sub-organizations waits here for
	// the one before to commit: the sums below then include it.
	if err := tx.Lock(ctx, "gas_usage:"+billing); err != nil {
		return apierr.Internalf(err, "locking the gas usage")
	}
	c, err := LoadUsageConfig(ctx, tx.NoLock(), billing)
	if err != nil {
		return err
	}
	if c == nil || !c.Enabled {
		return notEnabled(billing, c)
	}
	est := Micros(usd)
	since := now.Add(-c.Window())
	if billing != orgID {
		sub, err := windowUsage(ctx, tx, billing, orgID, since)
		if err != nil {
			return err
		}
		if est > c.SubOrgLimitMicros-sub {
			return limitExceeded("sub-organization", c, c.SubOrgLimitMicros, sub, est)
		}
	}
	all, err := windowUsage(ctx, tx, billing, "", since)
	if err != nil {
		return err
	}
	if est > c.OrgLimitMicros-all {
		return limitExceeded("organization-wide", c, c.OrgLimitMicros, all, est)
	}
	if err := pruneUsage(ctx, tx, billing, now); err != nil {
		return err
	}
	data, err := json.Marshal(usageEntry{OrgID: orgID, CAIP2: caip2, Micros: est})
	if err != nil {
		return apierr.Internalf(err, "encoding a gas usage entry")
	}
	err = tx.Insert(
		ctx,
		store.Record{Kind: KindUsageEntry, ID: ref, OrgID: billing, Data: data, CreatedAt: now, UpdatedAt: now},
		store.Key{Name: keyUsageOrg, Value: orgID},
	)
	return records.Err(err, KindUsageEntry)
}

// pruneUsage deletes a few of billing's entries older than any window can reach.
func pruneUsage(ctx context.Context, tx store.Tx, billing string, now time.Time) error {
	old, err := tx.List(ctx, KindUsageEntry, billing, store.ListOptions{Limit: pruneEntries})
	if err != nil {
		return apierr.Internalf(err, "reading the gas usage")
	}
	for _, rec := range old {
		if rec.CreatedAt.After(now.Add(-keepEntries)) {
			break
		}
		if err := tx.Delete(ctx, KindUsageEntry, rec.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return records.Err(err, KindUsageEntry)
		}
	}
	return nil
}

// Settle replaces ref's reservation with the actual cost once the transaction is included (0 if
// it never was). It is idempotent: the first Settle is final, later ones change nothing. An
// entry already pruned (older than any window) is left alone.
func Settle(ctx context.Context, tx store.Tx, ref string, usd *big.Rat, now time.Time) error {
	rec, err := tx.Get(ctx, KindUsageEntry, ref)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return apierr.Internalf(err, "reading a gas usage entry")
	}
	var e usageEntry
	if err := json.Unmarshal(rec.Data, &e); err != nil {
		return apierr.Internalf(err, "decoding a gas usage entry")
	}
	if e.Settled {
		return nil
	}
	e.Micros, e.Settled = Micros(usd), true
	if rec.Data, err = json.Marshal(e); err != nil {
		return apierr.Internalf(err, "encoding a gas usage entry")
	}
	rec.UpdatedAt = now
	return records.Err(tx.Put(ctx, rec, store.Key{Name: keyUsageOrg, Value: e.OrgID}), KindUsageEntry)
}
