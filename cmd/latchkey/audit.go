package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/store"
)

// audit writes a state change made from the command line to the operators' audit log (the
// dashboard's /audit), as the dashboard does for its own changes. The change is already made,
// so failing to record it is a warning, not a failure of the command.
func audit(ctx context.Context, st store.Store, stderr io.Writer, action, target string, detail any) {
	d := ""
	if detail != nil {
		b, _ := json.Marshal(detail)
		d = string(b)
	}
	if err := dashboard.WriteAudit(ctx, st, dashboard.Audit{Action: action, Target: target, Detail: d}); err != nil {
		fmt.Fprintf(stderr, "warning: the change is made but not written to the audit log: %v\n", err)
	}
}
