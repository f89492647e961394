package gasstation

import (
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/wire"
)

// Register adds upsert_gas_usage_config and get_gas_usage to reg and returns the record kinds
// the package keeps under an organization.
func Register(reg *activity.Registry) (owned []string) {
	reg.Submit(activity.Operation{
		Path:    "upsert_gas_usage_config",
		Access:  activity.AccessRoot,
		Execute: activity.On(upsertUsageConfig),
	})
	reg.Query(activity.QueryOp{Path: "get_gas_usage", Execute: activity.Query(getUsage)})
	return []string{KindUsageConfig, KindUsageEntry}
}

// upsertUsageConfig sets the billing organization's configuration. A field left empty keeps
// its current value; a first configuration needs all three limits' fields.
func upsertUsageConfig(x *activity.Exec, in *wire.UpsertGasUsageConfigIntent) (any, error) {
	if t := x.Caller.Target; t != nil && t.ParentID != "" {
		return nil, apierr.New(
			apierr.FailedPrecondition,
			"GAS_USAGE_CONFIG_SUB_ORGANIZATION",
			"gas usage limits are set in the billing organization %s, not in its sub-organization %s",
			t.ParentID,
			t.ID,
		)
	}
	c, err := LoadUsageConfig(x.Ctx, x.Tx, x.OrgID)
	if err != nil {
		return nil, err
	}
	if c == nil {
		c = &UsageConfig{ID: id.New(), OrgID: x.OrgID, CreatedAt: x.Now}
		for _, f := range [][2]string{
			{"parameters.orgWindowLimitUsd", in.OrgWindowLimitUsd},
			{"parameters.subOrgWindowLimitUsd", in.SubOrgWindowLimitUsd},
			{"parameters.windowDurationMinutes", in.WindowDurationMinutes},
		} {
			if strings.TrimSpace(f[1]) == "" {
				return nil, apierr.Invalid(f[0], "required in the organization's first gas usage configuration")
			}
		}
	}
	if v := in.OrgWindowLimitUsd; v != "" {
		if c.OrgLimitMicros, err = ParseUSD(v); err != nil {
			return nil, apierr.Invalid("parameters.orgWindowLimitUsd", "%v, not %q", err, clip(v))
		}
	}
	if v := in.SubOrgWindowLimitUsd; v != "" {
		if c.SubOrgLimitMicros, err = ParseUSD(v); err != nil {
			return nil, apierr.Invalid("parameters.subOrgWindowLimitUsd", "%v, not %q", err, clip(v))
		}
	}
	if v := in.WindowDurationMinutes; v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 || n > MaxWindowMinutes {
			return nil, apierr.Invalid(
				"parameters.windowDurationMinutes",
				"a whole number of minutes from 1 to %d (30 days) is required, not %q",
				MaxWindowMinutes,
				clip(v),
			)
		}
		c.WindowMinutes = int32(n)
	}
	if in.Enabled != nil {
		c.Enabled = *in.Enabled
	}
	if in.SolanaConfig != nil && in.SolanaConfig.RentPrefundEnabled != nil {
		c.RentPrefund = *in.SolanaConfig.RentPrefundEnabled
	}
	c.UpdatedAt = x.Now
	if err := saveUsageConfig(x.Ctx, x.Tx, c); err != nil {
		return nil, err
	}
	return wire.UpsertGasUsageConfigResult{GasUsageConfigId: c.ID}, nil
}

// clip shortens a bad value quoted back in an error.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// getUsage answers get_gas_usage: a sub-organization sees its own usage and the
// per-sub-organization limit, the billing organization the organization-wide ones. An
// organization without a configuration answers zeros.
func getUsage(q *activity.Read, _ *wire.GetGasUsageRequest) (any, error) {
	u, err := UsageOf(q.Ctx, q.R, q.OrgID, q.Now)
	if err != nil {
		return nil, err
	}
	return wire.GetGasUsageResponse{
		WindowDurationMinutes: u.WindowMinutes,
		WindowLimitUsd:        FormatUSD(u.LimitMicros),
		UsageUsd:              FormatUSD(u.UsageMicros),
	}, nil
}
