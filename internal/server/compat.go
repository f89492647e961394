package server

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/wire"
)

// notSupported says why each swagger operation Latchkey does not serve answers "not supported by
// Latchkey" (gRPC 12, HTTP 501), grouped by the reason's prefix. Every swagger operation is
// either registered or listed here; a test enforces it.
var notSupported = map[string]string{}

func init() {
	group := func(reason string, paths ...string) {
		for _, p := range paths {
			notSupported[p] = reason
		}
	}
	group(
		"hosted Turnkey service (swaps, earn, fiat on-ramp): no self-hosted equivalent",
		"create_swap_quote",
		"execute_swap",
		"upsert_swap_config",
		"claim_swap_fees",
		"get_swap_status",
		"earn_deploy_wrapper",
		"earn_deposit",
		"earn_withdraw",
		"earn_set_wrapper_state",
		"claim_earn_fees",
		"get_earn_deploy_status",
		"get_earn_deposit_status",
		"get_earn_withdraw_status",
		"get_claim_earn_fees_status",
		"list_earn_enabled_vaults",
		"list_earn_positions",
		"list_earn_vaults",
		"create_fiat_on_ramp_credential",
		"update_fiat_on_ramp_credential",
		"delete_fiat_on_ramp_credential",
		"init_fiat_on_ramp",
		"list_fiat_on_ramp_credentials",
		"get_onramp_transaction_status",
	)
	group("needs AWS Nitro enclave attestation, which a self-hosted server cannot produce",
		"get_boot_proof", "get_latest_boot_proof")
	group(
		"e-mail delivery events come from a hosted mail provider's feedback; Latchkey hands mail to your SMTP server and receives none",
		"list_email_events",
	)
	group(
		"needs a running TVC enclave or cluster: Latchkey keeps TVC apps and deployments as records and runs none (docs/tvc.md)",
		"get_tvc_deployment_debug_logs",
		"validate_tvc_image",
		"get_tvc_deployment_provisioning_details",
		"create_tvc_quorum_key",
		"post_tvc_quorum_key_share",
		"re_encrypt_tvc_quorum_key_share",
	)
	group("Spark signing protocols (FROST, transfers, Lightning): not yet implemented",
		"spark_sign_frost", "spark_prepare_transfer", "spark_claim_transfer", "spark_prepare_lightning_receive")
}

// engineOps are served by the engine itself rather than a registry entry.
var engineOps = map[string]bool{"approve_activity": true, "reject_activity": true}

// compatIntro is the hand-written head of docs/compatibility.md: what differs on purpose.
//
//go:embed compat_intro.md
var compatIntro string

// CompatibilityTable renders docs/compatibility.md from the registry: one row per swagger
// operation (the canonical file and the @turnkey/http superset).
func CompatibilityTable(reg *activity.Registry) string {
	var b strings.Builder
	b.WriteString(compatIntro)
	b.WriteString(
		"This file is generated from the operation registry by `LATCHKEY_UPDATE_DOCS=1 go test ./internal/server -run TestCompatibility`; ",
	)
	b.WriteString("edit the text above the table in internal/server/compat_intro.md, never this file.\n\n")
	b.WriteString(
		"Every operation of `spec/public_api.swagger.json` (and of the `@turnkey/http` superset, marked †) answers either its result or ",
	)
	b.WriteString(
		"the error `{\"code\":12,\"message\":\"… is not supported by Latchkey: <reason>\"}` (HTTP 501) naming it and giving ",
	)
	b.WriteString("the reason listed below. None answers 404.\n\n")
	implemented, unsupported := 0, 0
	type row struct{ kind, path, status string }
	var rows []row
	for _, op := range wire.Ops {
		if op.Kind == wire.Other {
			continue
		}
		name := op.Path
		if op.Superset {
			name += " †"
		}
		status := "implemented (since " + Version + ")"
		if !reg.Implemented(op.Kind, op.Path) && !engineOps[op.Path] {
			status = "not supported: " + notSupported[op.Path]
			unsupported++
		} else {
			implemented++
		}
		rows = append(rows, row{op.Kind.String(), name, status})
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].kind != rows[j].kind {
			return rows[i].kind > rows[j].kind // submit before query
		}
		return rows[i].path < rows[j].path
	})
	fmt.Fprintf(
		&b,
		"%d operations implemented, %d not supported.\n\n| kind | operation | status |\n|---|---|---|\n",
		implemented,
		unsupported,
	)
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | `%s` | %s |\n", r.kind, r.path, r.status)
	}
	return b.String()
}
