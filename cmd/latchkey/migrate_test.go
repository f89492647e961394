package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/records/recordstest"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/store/postgres"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// freshPostgres returns LATCHKEY_TEST_DATABASE_URL narrowed to a new, empty schema (by its
// search_path) dropped when the test ends, or skips the test when the variable is unset.
func freshPostgres(t *testing.T) string {
	t.Helper()
	url := os.Getenv("LATCHKEY_TEST_DATABASE_URL")
	if url == "" {
		t.Skip(
			"LATCHKEY_TEST_DATABASE_URL not set: set it to a PostgreSQL URL (see README, Test it) to run migrate-store against PostgreSQL",
		)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("LATCHKEY_TEST_DATABASE_URL is set but the server is unreachable: %v", err)
	}
	var b [8]byte
	rand.Read(b[:])
	schema := "lk_migrate_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(context.Background())
	})
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

func openPostgres(t *testing.T, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url, postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recordKinds lists every record kind Latchkey's packages declare (recordstest.DeclaredKinds):
// a new domain kind is found there, so the migration test covers it without being edited.
func recordKinds(t *testing.T) []string {
	t.Helper()
	kinds, err := recordstest.DeclaredKinds(filepath.Join("..", "..", "internal"))
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// migrateDeployment makes an embedded deployment with a real organization, user, API key, server
// keys, keyring and a wallet made over the API (so its activities are real), then gives every
// record kind Latchkey declares at least one record through the store API, with unique and
// plain keys, and adds activities of the odd shapes (failed ones sharing a fingerprint, none).
func migrateDeployment(t *testing.T) (dir, mk, org, priv, addr string, kinds []string) {
	t.Helper()
	ctx := context.Background()
	dir = t.TempDir()
	mk = filepath.Join(t.TempDir(), "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	priv, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	var out bytes.Buffer
	if err := run(ctx, []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub, "--data-dir", dir, "--master-key-file", mk},
		&out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var created map[string]string
	_ = json.Unmarshal(out.Bytes(), &created)
	org = created["organizationId"]
	a, stop := serveDir(t, dir, mk, org, priv)
	w := a.submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "moved", "accounts": []any{map[string]any{
			"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}},
	)
	addr = w["createWalletResult"].(map[string]any)["addresses"].([]any)[0].(string)
	stop()

	kinds = recordKinds(t)
	st, err := sqlite.Open(ctx, filepath.Join(dir, server.DatabaseFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	have, err := st.RecordKinds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var synthetic []string
	err = st.Update(ctx, func(tx store.Tx) error {
		for _, kind := range kinds {
			if have[kind] > 0 {
				continue
			}
			synthetic = append(synthetic, kind)
			// Owned by an organization no one serves, so the server leaves them alone.
			r := store.Record{
				Kind:      kind,
				ID:        "migrated-" + kind,
				OrgID:     "org-migrate-test",
				Data:      []byte(`{"synthetic":true}`),
				CreatedAt: now,
				UpdatedAt: now,
			}
			if err := tx.Insert(ctx, r, store.Key{Name: kind + ".unique", Value: "u-" + kind, Unique: true},
				store.Key{Name: "migrate.plain", Value: "shared"}); err != nil {
				return err
			}
		}
		// Edge cases of the data itself: empty data and zero times, bytes that are not UTF-8,
		// many keys, ids whose byte order is not a linguistic order.
		if err := tx.Insert(ctx, store.Record{Kind: "migrate_edge", ID: "é", OrgID: ""}); err != nil {
			return err
		}
		if err := tx.Insert(ctx, store.Record{Kind: "migrate_edge", ID: "B", OrgID: "o", Data: []byte{0, 0xff, 0xfe, '\n'}, CreatedAt: now, UpdatedAt: now.Add(time.Hour)},
			store.Key{Name: "edge.k", Value: "ü"}, store.Key{Name: "edge.k", Value: "a"}, store.Key{Name: "edge.u", Value: "1", Unique: true}); err != nil {
			return err
		}
		for i, a := range []store.Activity{
			{ID: "act-failed-1", OrgID: org, Fingerprint: "fp-shared", Status: store.ActivityStatusFailed, Type: "T"},
			{ID: "act-failed-2", OrgID: org, Fingerprint: "fp-shared", Status: store.ActivityStatusFailed, Type: "T"},
			{ID: "act-holder", OrgID: org, Fingerprint: "fp-shared", Status: "ACTIVITY_STATUS_COMPLETED", Type: "T"},
			{ID: "act-no-fp", OrgID: "", Status: "ACTIVITY_STATUS_PENDING", Type: "T"},
		} {
			a.CreatedAt, a.UpdatedAt, a.Data = now.Add(
				time.Duration(i),
			), now.Add(
				time.Duration(i),
			), []byte(
				`{"n":`+strconv.Itoa(i)+`}`,
			)
			if err := tx.PutActivity(ctx, a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kinds declared; synthetic records for %d of them: %v", len(kinds), len(synthetic), synthetic)
	return dir, mk, org, priv, addr, kinds
}

// latchkey migrate-store moves an embedded deployment holding every record kind into an empty
// PostgreSQL: every record (with its keys) and activity is there, the same bytes, the server
// opened on PostgreSQL has the same public keys and signs with the wallet made before the move,
// and a second migration into the now non-empty database is refused, naming what it holds.
func TestMigrateStoreMovesEverything(t *testing.T) {
	url := freshPostgres(t)
	ctx := context.Background()
	dir, mk, org, priv, addr, kinds := migrateDeployment(t)

	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"migrate-store", "--from", dir, "--to", url}, &stdout, &stderr); err != nil {
		t.Fatalf("migrate-store: %v\n%s", err, stderr.String())
	}
	var res struct {
		Migrated struct {
			Records, Activities int
			Kinds               map[string]int
		}
		Verified bool
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || !res.Verified || res.Migrated.Activities < 5 {
		t.Fatalf("stdout %q: %v", stdout.String(), err)
	}
	// Not a terminal: one progress line per kind, then the verification.
	for _, kind := range append(slices.Clone(kinds), "activities") {
		if !regexp.MustCompile(`(?m)^migrate-store: ` + regexp.QuoteMeta(kind) + ` +(\d+)/(\d+) `).
			MatchString(stderr.String()) {
			t.Errorf("no progress line for %s in:\n%s", kind, stderr.String())
		}
	}
	if !strings.Contains(stderr.String(), "copied and verified") || strings.Contains(stderr.String(), "\r") {
		t.Errorf("stderr:\n%s", stderr.String())
	}

	// Everything is in PostgreSQL, as it was in SQLite.
	src, err := sqlite.Open(ctx, filepath.Join(dir, server.DatabaseFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := openPostgres(t, url)
	got, err := dst.RecordKinds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range kinds {
		if got[kind] == 0 {
			t.Errorf("no %s record in PostgreSQL", kind)
		}
	}
	if err := verify(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	// Record by record through the Reader: same record, every key finds it, and the same for
	// activities (by id and by fingerprint).
	srcKinds, _ := src.RecordKinds(ctx)
	for kind := range srcKinds {
		if err := src.EachRecord(ctx, kind, func(want store.Record, keys []store.Key) error {
			return dst.View(ctx, func(r store.Reader) error {
				rec, err := r.Get(ctx, kind, want.ID)
				if err != nil || rec.OrgID != want.OrgID || !bytes.Equal(rec.Data, want.Data) || !rec.CreatedAt.Equal(want.CreatedAt) || !rec.UpdatedAt.Equal(want.UpdatedAt) {
					t.Errorf("%s/%s in PostgreSQL: %+v %v", kind, want.ID, rec, err)
				}
				for _, k := range keys {
					refs, err := r.Lookup(ctx, k.Name, k.Value)
					if err != nil || !slices.Contains(refs, store.Ref{Kind: kind, ID: want.ID, OrgID: want.OrgID}) {
						t.Errorf("key %s=%s of %s/%s: %v %v", k.Name, k.Value, kind, want.ID, refs, err)
					}
				}
				return nil
			})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.EachActivity(ctx, func(want store.Activity) error {
		return dst.View(ctx, func(r store.Reader) error {
			a, err := r.GetActivity(ctx, want.ID)
			if err != nil || a.Status != want.Status || a.Fingerprint != want.Fingerprint || !bytes.Equal(a.Data, want.Data) || !a.CreatedAt.Equal(want.CreatedAt) {
				t.Errorf("activity %s in PostgreSQL: %+v %v", want.ID, a, err)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	_ = dst.View(ctx, func(r store.Reader) error {
		if a, err := r.GetActivityByFingerprint(ctx, "fp-shared"); err != nil || a.ID != "act-holder" {
			t.Errorf("fingerprint holder in PostgreSQL: %v %v", a.ID, err)
		}
		return nil
	})

	// The server on PostgreSQL is the same deployment: same public keys, and it signs with the
	// wallet made before the move.
	var before, after bytes.Buffer
	if err := run(ctx, []string{"keys", "--data-dir", dir, "--master-key-file", mk}, &before, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"keys", "--data-dir", t.TempDir(), "--database-url", url, "--master-key-file", mk}, &after, io.Discard); err != nil {
		t.Fatal(err)
	}
	if before.String() != after.String() {
		t.Fatalf("public keys changed:\n%s\n%s", before.String(), after.String())
	}
	s, err := server.Open(ctx, server.Config{DataDir: t.TempDir(), DatabaseURL: url, MasterKeyFile: mk, MustExist: true,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := startAPI(t, s)
	b := &api{t: t, url: srv, org: org, priv: priv}
	sig := b.submit(
		"sign_raw_payload",
		"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
		map[string]any{"signWith": addr, "payload": strings.Repeat("cd", 32),
			"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
	)
	if r := sig["signRawPayloadResult"].(map[string]any)["r"]; r == nil || r == "" {
		t.Fatalf("signature: %v", sig)
	}

	// A second migration finds the database not empty and says what is there.
	err = run(ctx, []string{"migrate-store", "--from", dir, "--to", url}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not empty") || !strings.Contains(err.Error(), " wallet,") ||
		!strings.Contains(err.Error(), "activities") {
		t.Fatalf("migration into a non-empty database: %v", err)
	}
}

// A failure midway (here the 3rd record) leaves PostgreSQL empty: one transaction. A copy that
// does not match (a record changed, a record gone, after the copy) is caught by the
// verification, and nothing is committed either. Then the same database takes the migration.
func TestMigrateStoreAllOrNothing(t *testing.T) {
	url := freshPostgres(t)
	ctx := context.Background()
	dir := t.TempDir()
	src, err := sqlite.Open(ctx, filepath.Join(dir, server.DatabaseFile), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	err = src.Update(ctx, func(tx store.Tx) error {
		for i, kind := range []string{"organization", "user", "user", "wallet", "wallet"} {
			if err := tx.Insert(ctx, store.Record{Kind: kind, ID: kind + strconv.Itoa(i), OrgID: "o", Data: []byte("{}"), CreatedAt: now, UpdatedAt: now},
				store.Key{Name: kind + ".n", Value: strconv.Itoa(i), Unique: true}); err != nil {
				return err
			}
		}
		return tx.PutActivity(
			ctx,
			store.Activity{
				ID:          "a1",
				OrgID:       "o",
				Fingerprint: "f",
				Status:      "ACTIVITY_STATUS_COMPLETED",
				Type:        "T",
				CreatedAt:   now,
				UpdatedAt:   now,
				Data:        []byte("{}"),
			},
		)
	})
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	dst := openPostgres(t, url)
	empty := func(when string) {
		t.Helper()
		kinds, err := dst.RecordKinds(ctx)
		if err != nil || len(kinds) != 0 {
			t.Fatalf("%s: PostgreSQL holds %v (%v)", when, kinds, err)
		}
		n, err := countAll(ctx, dst)
		if err != nil || n != 0 {
			t.Fatalf("%s: PostgreSQL holds %d activities (%v)", when, n, err)
		}
		var keys int
		if err := pgxCount(ctx, url, "SELECT count(*) FROM record_keys", &keys); err != nil || keys != 0 {
			t.Fatalf("%s: PostgreSQL holds %d keys (%v)", when, keys, err)
		}
	}
	t.Cleanup(func() { migrateHook = nil })
	boom := errors.New("the network went away")
	for _, c := range []struct {
		name string
		hook func(ctx context.Context, tx store.Tx, stage string, n int) error
		want []string
	}{
		{"failure midway", func(ctx context.Context, tx store.Tx, stage string, n int) error {
			if stage == "copied" && n == 3 {
				return boom
			}
			return nil
		}, []string{"the network went away", "no record or activity was written"}},
		{"a record changed", func(ctx context.Context, tx store.Tx, stage string, n int) error {
			if stage != "verify" {
				return nil
			}
			r, err := tx.Get(ctx, "user", "user1")
			if err != nil {
				return err
			}
			r.Data = []byte(`{"tampered":true}`)
			return tx.Put(ctx, r, store.Key{Name: "user.n", Value: "1", Unique: true})
		}, []string{"verification failed", "user: 2 on both sides but their SHA-256 differ", "no record or activity was written"}},
		{"a key changed", func(ctx context.Context, tx store.Tx, stage string, n int) error {
			if stage != "verify" {
				return nil
			}
			r, err := tx.Get(ctx, "wallet", "wallet3")
			if err != nil {
				return err
			}
			return tx.Put(ctx, r)
		}, []string{"verification failed", "wallet: 2 on both sides but their SHA-256 differ"}},
		{"a record gone, an activity added", func(ctx context.Context, tx store.Tx, stage string, n int) error {
			if stage != "verify" {
				return nil
			}
			if err := tx.Delete(ctx, "organization", "organization0"); err != nil {
				return err
			}
			return tx.PutActivity(ctx, store.Activity{ID: "extra", OrgID: "o", Status: "S", Type: "T", Data: []byte("{}")})
		}, []string{"verification failed", "organization: 1 in the source, 0 in PostgreSQL", "activities: 1 in the source, 2 in PostgreSQL"}},
	} {
		migrateHook = c.hook
		var stderr bytes.Buffer
		err := run(ctx, []string{"migrate-store", "--from", dir, "--to", url}, io.Discard, &stderr)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", c.name, err, w)
			}
		}
		if strings.Contains(c.want[0], "verification") && !strings.Contains(stderr.String(), "VERIFICATION FAILED") {
			t.Errorf("%s: stderr does not shout:\n%s", c.name, stderr.String())
		}
		empty(c.name)
	}
	migrateHook = nil
	var stdout bytes.Buffer
	if err := run(ctx, []string{"migrate-store", "--from", dir, "--to", url}, &stdout, io.Discard); err != nil {
		t.Fatalf("migration after the failures: %v", err)
	}
	if !strings.Contains(stdout.String(), `"records":5`) || !strings.Contains(stdout.String(), `"activities":1`) {
		t.Fatalf("stdout: %s", stdout.String())
	}
}

func countAll(ctx context.Context, s store.Store) (n int, err error) {
	err = s.View(ctx, func(r store.Reader) error {
		n, err = r.CountActivities(ctx, "", store.ActivityFilter{})
		return err
	})
	return n, err
}

func pgxCount(ctx context.Context, url, q string, n *int) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, q).Scan(n)
}

// A served deployment is refused (serve's data directory lock), naming the server's pid; so
// are a missing deployment and a target that is not PostgreSQL. None of this needs PostgreSQL.
func TestMigrateStoreRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mk := filepath.Join(t.TempDir(), "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	_, pub, _ := stamp.GenerateKey(stamp.CurveP256)
	if err := run(ctx, []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", pub, "--data-dir", dir, "--master-key-file", mk},
		io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	s, err := server.Open(ctx, server.Config{DataDir: dir, MasterKeyFile: mk, MustExist: true, Exclusive: true,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	err = run(
		ctx,
		[]string{"migrate-store", "--from", dir, "--to", "postgres://nobody@127.0.0.1:1/x"},
		io.Discard,
		io.Discard,
	)
	s.Close()
	if err == nil || !strings.Contains(err.Error(), "cannot migrate while the deployment is served") ||
		!strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("migrating a served deployment: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "postgres://x/y"}, "--from is required"},
		{[]string{"--from", dir}, "--to is required"},
		{[]string{"--from", dir, "--to", "mysql://x/y"}, "must be a postgres:// URL"},
		{[]string{"--from", filepath.Join(dir, "nope"), "--to", "postgres://x/y"}, "no Latchkey deployment"},
	} {
		err := run(ctx, append([]string{"migrate-store"}, c.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a mistyped --from was created: %v", err)
	}
	if err := run(ctx, []string{"migrate-stor"}, io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), `did you mean "migrate-store"?`) {
		t.Errorf("a mistyped migrate-store: %v", err)
	}
}

// On a terminal the progress line is redrawn in place (carriage return), a line per kind kept.
func TestMigrateProgressOnATerminal(t *testing.T) {
	var b bytes.Buffer
	p := &progress{w: &b, tty: true}
	p.begin(3)
	p.section("user", 2)
	p.add()
	p.add()
	p.end()
	p.section("activities", 1)
	p.add()
	p.end()
	out := b.String()
	if !strings.Contains(out, "\r\x1b[Kmigrate-store: user") || !strings.Contains(out, "2/2   (all: 2/3)") ||
		!strings.Contains(out, "1/1   (all: 3/3)\n") || strings.Count(out, "\n") != 2 {
		t.Fatalf("%q", out)
	}
}

// startAPI serves s's activity API until the test ends, then closes s.
func startAPI(t *testing.T, s *server.Server) string {
	t.Helper()
	srv := httptest.NewServer(s.API.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv.URL
}
