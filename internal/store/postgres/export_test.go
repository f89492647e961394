package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestExportCoversEveryTable: store.Exporter copies records, their keys and activities. A
// migration adding a table must extend Exporter (and latchkey migrate-store), or this fails.
func TestExportCoversEveryTable(t *testing.T) {
	s := openFresh(t, Options{})
	ctx := context.Background()
	rows, _ := s.pool.Query(
		ctx,
		"SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1",
	)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tables, ","); got != "activities,record_keys,records,schema_migrations" {
		t.Fatalf("tables = %s: a new table needs store.Exporter to cover it", got)
	}
}
