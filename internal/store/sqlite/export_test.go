package sqlite

import (
	"context"
	"strings"
	"testing"
)

// TestExportCoversEveryTable: store.Exporter copies records, their keys and activities. A
// migration adding a table must extend Exporter (and latchkey migrate-store), or this fails.
func TestExportCoversEveryTable(t *testing.T) {
	s := openTemp(t, Options{})
	rows, err := s.rdb.QueryContext(context.Background(),
		"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if got := strings.Join(tables, ","); got != "activities,record_keys,records,schema_migrations" {
		t.Fatalf("tables = %s: a new table needs store.Exporter to cover it", got)
	}
}
