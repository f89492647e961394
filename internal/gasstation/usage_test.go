package gasstation

import (
	"context"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/sqlite"
	"github.com/latchkey/latchkey/internal/store/storetest"
)

// usageStores opens a fresh SQLite store, and a PostgreSQL one when LATCHKEY_TEST_DATABASE_URL
// is set.
func usageStores(t *testing.T) map[string]store.Store {
	t.Helper()
	out := map[string]store.Store{}
	for name, open := range usageStoreOpeners(t) {
		out[name] = open()
	}
	return out
}

// usageStoreOpeners are usageStores' stores as functions that each open one more store over
// the same data: a second process (PostgreSQL's stores group concurrent transactions of one
// process into one commit, so only separate stores race for real).
func usageStoreOpeners(t *testing.T) map[string]func() store.Store {
	t.Helper()
	ctx := context.Background()
	lite, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "u.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	out := map[string]func() store.Store{"sqlite": func() store.Store { return lite }}
	if os.Getenv("LATCHKEY_TEST_DATABASE_URL") != "" {
		url, schema := storetest.PostgresSchema(t)
		out["postgres"] = func() store.Store {
			pg, err := postgres.Open(ctx, url, postgres.Options{Schema: schema, MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pg.Close() })
			return pg
		}
	}
	return out
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// orgs stores a billing organization B with sub-organizations S1 and S2, and gives B cfg when
// it is not nil.
func orgs(t *testing.T, st store.Store, cfg *UsageConfig) {
	t.Helper()
	ctx := context.Background()
	err := st.Update(ctx, func(tx store.Tx) error {
		for _, o := range []*directory.Organization{
			{ID: "B", Name: "billing", CreatedAt: t0, UpdatedAt: t0},
			{ID: "S1", Name: "one", ParentID: "B", CreatedAt: t0, UpdatedAt: t0},
			{ID: "S2", Name: "two", ParentID: "B", CreatedAt: t0, UpdatedAt: t0},
		} {
			if err := directory.SaveOrganization(ctx, tx, o); err != nil {
				return err
			}
		}
		if cfg != nil {
			cfg.OrgID, cfg.ID, cfg.CreatedAt, cfg.UpdatedAt = "B", "cfg", t0, t0
			return saveUsageConfig(ctx, tx, cfg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func usd(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

type step struct {
	org, ref, usd string
	at            time.Duration // after t0
	settle        bool          // Settle ref at usd instead of reserving
	want          string        // "" or the TurnkeyCode of the refusal
	// usage of S1, S2 and B (organization-wide) after the step, in micro-dollars (-1: not checked)
	s1, s2, b int64
}

func TestReserveAndSettle(t *testing.T) {
	limits := &UsageConfig{Enabled: true, OrgLimitMicros: 10_000_000, SubOrgLimitMicros: 6_000_000, WindowMinutes: 60}
	tests := []struct {
		name  string
		cfg   *UsageConfig
		steps []step
	}{
		{"no configuration: not enabled", nil, []step{
			{org: "S1", ref: "a", usd: "0", want: CodeNotEnabled, s1: 0, s2: 0, b: 0},
			{org: "B", ref: "b", usd: "0", want: CodeNotEnabled, s1: 0, s2: 0, b: 0},
		}},
		{"disabled", &UsageConfig{OrgLimitMicros: 10_000_000, SubOrgLimitMicros: 6_000_000, WindowMinutes: 60}, []step{
			{org: "S1", ref: "a", usd: "1", want: CodeNotEnabled, s1: 0, s2: 0, b: 0},
		}},
		{"per sub-organization limit", limits, []step{
			{org: "S1", ref: "a", usd: "5", s1: 5_000_000, s2: 0, b: 5_000_000},
			{org: "S1", ref: "b", usd: "1.000001", want: CodeLimitExceeded, s1: 5_000_000, s2: 0, b: 5_000_000},
			{org: "S1", ref: "c", usd: "1", s1: 6_000_000, s2: 0, b: 6_000_000},
			// a testnet send counts $0 and passes a full limit
			{org: "S1", ref: "d", usd: "0", s1: 6_000_000, s2: 0, b: 6_000_000},
		}},
		{"organization-wide limit across two sub-organizations", limits, []step{
			{org: "S1", ref: "a", usd: "5", s1: 5_000_000, s2: 0, b: 5_000_000},
			{org: "S2", ref: "b", usd: "4.5", s1: 5_000_000, s2: 4_500_000, b: 9_500_000},
			{org: "S2", ref: "c", usd: "0.6", want: CodeLimitExceeded, s1: 5_000_000, s2: 4_500_000, b: 9_500_000},
			{org: "B", ref: "d", usd: "0.5", s1: 5_000_000, s2: 4_500_000, b: 10_000_000},
			{org: "B", ref: "e", usd: "0.000001", want: CodeLimitExceeded, s1: -1, s2: -1, b: 10_000_000},
		}},
		{"window expiry", limits, []step{
			{org: "S1", ref: "a", usd: "6", s1: 6_000_000, s2: 0, b: 6_000_000},
			{
				org:  "S1",
				ref:  "b",
				usd:  "1",
				at:   59 * time.Minute,
				want: CodeLimitExceeded,
				s1:   6_000_000,
				b:    -1,
				s2:   -1,
			},
			{org: "S1", ref: "c", usd: "1", at: 60*time.Minute + time.Second, s1: 1_000_000, s2: 0, b: 1_000_000},
			{org: "S1", ref: "d", usd: "5", at: 61 * time.Minute, s1: 6_000_000, s2: 0, b: 6_000_000},
		}},
		{"settle lowers the usage and is idempotent", limits, []step{
			{org: "S1", ref: "a", usd: "6", s1: 6_000_000, s2: 0, b: 6_000_000},
			{org: "S1", ref: "b", usd: "0.01", want: CodeLimitExceeded, s1: 6_000_000, s2: -1, b: -1},
			{ref: "a", usd: "0.25", settle: true, s1: 250_000, s2: 0, b: 250_000},
			{ref: "a", usd: "3", settle: true, s1: 250_000, s2: 0, b: 250_000},
			// a transaction never included settles at 0
			{org: "S2", ref: "c", usd: "2", s1: 250_000, s2: 2_000_000, b: 2_250_000},
			{ref: "c", usd: "0", settle: true, s1: 250_000, s2: 0, b: 250_000},
			{ref: "never-reserved", usd: "1", settle: true, s1: 250_000, s2: 0, b: 250_000},
			// rounding is up, to the micro-dollar
			{org: "S1", ref: "d", usd: "1/3", s1: 583_334, s2: 0, b: 583_334},
		}},
	}
	for name, st := range usageStores(t) {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				ctx := context.Background()
				// every case gets its own organizations' ids through a fresh store prefix
				var cfg *UsageConfig
				if tt.cfg != nil {
					c := *tt.cfg
					cfg = &c
				}
				wipe(t, st)
				orgs(t, st, cfg)
				for i, s := range tt.steps {
					now := t0.Add(s.at)
					err := st.Update(ctx, func(tx store.Tx) error {
						if s.settle {
							return Settle(ctx, tx, s.ref, usd(s.usd), now)
						}
						return Reserve(ctx, tx, s.org, "eip155:1", s.ref, usd(s.usd), now)
					})
					got := ""
					if err != nil {
						got = apierr.From(err).TurnkeyCode
						if got == "" {
							got = err.Error()
						}
						if e := apierr.From(err); e.Code != apierr.FailedPrecondition {
							t.Fatalf("step %d: %v (code %v)", i, err, e.Code)
						}
					}
					if got != s.want {
						t.Fatalf("step %d: got %q (%v), want %q", i, got, err, s.want)
					}
					for org, want := range map[string]int64{"S1": s.s1, "S2": s.s2, "B": s.b} {
						if want < 0 {
							continue
						}
						var u Usage
						err := st.View(ctx, func(r store.Reader) error {
							var err error
							u, err = UsageOf(ctx, r, org, now)
							return err
						})
						if err != nil {
							t.Fatal(err)
						}
						if u.UsageMicros != want {
							t.Fatalf("step %d: usage of %s = %d, want %d", i, org, u.UsageMicros, want)
						}
					}
				}
			})
		}
	}
}

// wipe removes the organizations, configuration and entries a case left.
func wipe(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	err := st.Update(ctx, func(tx store.Tx) error {
		for _, kind := range []string{KindUsageEntry, KindUsageConfig, directory.KindOrganization} {
			for _, org := range []string{"", "B"} {
				recs, err := tx.List(ctx, kind, org, store.ListOptions{})
				if err != nil {
					return err
				}
				for _, r := range recs {
					if err := tx.Delete(ctx, kind, r.ID); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Reserves racing for a limit only some of them fit: exactly as many pass as fit, on SQLite
// and, in parallel transactions of four stores (processes), on PostgreSQL.
func TestReserveConcurrent(t *testing.T) {
	for name, open := range usageStoreOpeners(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open()
			procs := []store.Store{st, open(), open(), open()}
			orgs(t, st, &UsageConfig{
				Enabled:           true,
				OrgLimitMicros:    10_000_000,
				SubOrgLimitMicros: 10_000_000,
				WindowMinutes:     60,
			})
			const racers = 8
			errs := make([]error, racers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range racers {
				wg.Go(func() {
					<-start
					org := []string{"S1", "S2"}[i%2]
					errs[i] = procs[i%len(procs)].Update(ctx, func(tx store.Tx) error {
						return Reserve(ctx, tx, org, "eip155:1", "race-"+string(rune('a'+i)), usd("3"), t0)
					})
				})
			}
			close(start)
			wg.Wait()
			passed := 0
			for _, err := range errs {
				switch {
				case err == nil:
					passed++
				case apierr.From(err).TurnkeyCode != CodeLimitExceeded:
					t.Fatalf("unexpected error: %v", err)
				}
			}
			if passed != 3 {
				t.Fatalf("%d reservations of $3 passed a $10 limit, want 3", passed)
			}
			var u Usage
			_ = st.View(ctx, func(r store.Reader) error {
				var err error
				u, err = UsageOf(ctx, r, "B", t0)
				return err
			})
			if u.UsageMicros != 9_000_000 {
				t.Fatalf("usage %d after the race", u.UsageMicros)
			}
		})
	}
}

func TestUSDFormatAndParse(t *testing.T) {
	for _, tt := range []struct {
		micros int64
		want   string
	}{{0, "0.00"}, {1, "0.000001"}, {1_500_000, "1.50"}, {125, "0.000125"}, {12_340_000, "12.34"}, {-5_000_000, "-5.00"}} {
		if got := FormatUSD(tt.micros); got != tt.want {
			t.Errorf("FormatUSD(%d) = %q, want %q", tt.micros, got, tt.want)
		}
	}
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"25", 25_000_000, true}, {"0.5", 500_000, true}, {"12.345678", 12_345_678, true}, {"0", 0, true},
		{"1000000000", 1_000_000_000_000_000, true},
		{"1000000000.000001", 0, false}, {"-1", 0, false}, {"1.2345678", 0, false}, {"", 0, false}, {"1.", 0, false},
		{".5", 0, false}, {"1e3", 0, false}, {" 1", 0, false}, {"0x10", 0, false}, {"99999999999", 0, false},
	} {
		got, err := ParseUSD(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseUSD(%q) = %d, %v", tt.in, got, err)
		}
	}
	for _, tt := range []struct {
		in   string
		want int64
	}{{"0", 0}, {"-1", 0}, {"1/1000000", 1}, {"1/3000000", 1}, {"2.5", 2_500_000}} {
		if got := Micros(usd(tt.in)); got != tt.want {
			t.Errorf("Micros(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
