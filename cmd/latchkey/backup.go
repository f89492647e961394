package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// cmdBackup writes a consistent snapshot of an embedded (SQLite) deployment while it serves.
// PostgreSQL deployments are backed up with pg_dump (docs/operations.md). The master key is not
// in the snapshot: back it up separately.
func cmdBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "./latchkey-data", "data directory of the deployment to back up")
	to := fs.String("to", "", "file to write the snapshot to (must not exist; written 0600)")
	databaseURL := fs.String("database-url", "", "refused: back up PostgreSQL with pg_dump")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *databaseURL != "" {
		return usageError{
			"backup copies an embedded (SQLite) deployment; back up PostgreSQL with pg_dump (docs/operations.md)",
		}
	}
	if *to == "" {
		return usageError{"--to is required: the file to write the snapshot to"}
	}
	db := filepath.Join(*dataDir, server.DatabaseFile)
	if fi, err := os.Stat(db); err != nil || fi.Size() == 0 {
		return fmt.Errorf(
			"no Latchkey deployment in %s (%s not found or empty; is --data-dir right?)",
			*dataDir,
			server.DatabaseFile,
		)
	}
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Backup(ctx, *to); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "{\"backup\":%q}\n", *to)
	return nil
}

// cmdRestore puts a snapshot made by backup in place as a data directory's database. The data
// directory must hold no database (restore into a new directory, or move the old database away)
// and no serve may run on it.
func cmdRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "./latchkey-data", "data directory to restore into (must hold no database)")
	from := fs.String("from", "", "snapshot written by latchkey backup")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *from == "" {
		return usageError{"--from is required: the snapshot to restore"}
	}
	lock, err := server.LockDataDir(*dataDir)
	if err != nil {
		return err
	}
	if lock != nil {
		defer lock.Close()
	}
	db := filepath.Join(*dataDir, server.DatabaseFile)
	if _, err := os.Stat(db); err == nil {
		return fmt.Errorf("%s exists: restore into a new data directory, or move the database away first", db)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	// The snapshot must be a database Latchkey can open (its integrity is checked by opening it).
	check, err := sqlite.Open(ctx, *from, sqlite.Options{})
	if err != nil {
		return fmt.Errorf("%s is not a Latchkey database: %w", *from, err)
	}
	check.Close()
	in, err := os.ReadFile(*from)
	if err != nil {
		return err
	}
	if err := os.WriteFile(db+".restoring", in, 0o600); err != nil {
		return err
	}
	if err := os.Rename(db+".restoring", db); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "{\"restored\":%q}\n", db)
	return nil
}
