package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/store"
)

// checkDataDir refuses, before anything is written, the data directories that would otherwise
// be silently treated as new or damaged:
//   - a latchkey.db of 0 bytes (always: it is not a database, and treating it as new would
//     overwrite the --dev credentials files);
//   - with MustExist, a directory that holds no database (a mistyped --data-dir would make a new,
//     empty deployment and print brand-new server keys);
//   - with --dev and no master key given, a directory with a database but no master.key (made by
//     init with a master key of its own: --dev would write a stray master.key and then fail).
func checkDataDir(cfg Config) error {
	if cfg.DatabaseURL != "" {
		return nil
	}
	db := filepath.Join(cfg.DataDir, DatabaseFile)
	fi, err := os.Stat(db)
	switch {
	case err == nil && fi.Size() == 0:
		return fmt.Errorf("%s is empty (0 bytes): it is not a Latchkey database. Restore it from a backup, "+
			"or remove it to start a new deployment", db)
	case errors.Is(err, os.ErrNotExist) && cfg.MustExist:
		return fmt.Errorf("no Latchkey deployment in %s (%s not found; is --data-dir right?). "+
			"Create one with `latchkey init` (or `latchkey serve --dev` for development)", cfg.DataDir, DatabaseFile)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("reading the data directory: %w", err)
	}
	if err == nil && cfg.Dev && cfg.MasterKeyFile == "" && os.Getenv("LATCHKEY_MASTER_KEY") == "" {
		if _, kerr := os.Stat(filepath.Join(cfg.DataDir, MasterKeyFile)); errors.Is(kerr, os.ErrNotExist) {
			return fmt.Errorf("%s holds a deployment that was not made by --dev (it has no %s): "+
				"pass its master key with --master-key-file or LATCHKEY_MASTER_KEY", cfg.DataDir, MasterKeyFile)
		}
	}
	return nil
}

// checkDatabase refuses, with MustExist, a PostgreSQL database that holds no Latchkey
// deployment (no keyring): opening it would create one.
func checkDatabase(ctx context.Context, cfg Config, st store.Store) error {
	if cfg.DatabaseURL == "" || !cfg.MustExist {
		return nil
	}
	ok, err := custody.KeyringExists(ctx, st)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("the database at --database-url holds no Latchkey deployment (no keyring): " +
			"create one with `latchkey init --database-url …` first")
	}
	return nil
}
