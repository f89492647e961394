package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PostgresSchema returns LATCHKEY_TEST_DATABASE_URL and a fresh empty schema in it, dropped
// when the test ends, for a package testing its behaviour on PostgreSQL (open the store with
// that schema). It skips the test when the variable is not set, and fails it when the server
// is unreachable.
func PostgresSchema(t testing.TB) (url, schema string) {
	t.Helper()
	url = os.Getenv("LATCHKEY_TEST_DATABASE_URL")
	if url == "" {
		t.Skip("LATCHKEY_TEST_DATABASE_URL not set: this test needs PostgreSQL")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("LATCHKEY_TEST_DATABASE_URL is set but the server is unreachable: %v", err)
	}
	defer conn.Close(ctx)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema = "lk_test_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return url, schema
}
