package allowlists

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/wire"
)

// Limits of one allowlist (docs/limits.md §8.2). An allowlist is stored in its organization's
// (or API key's) record, which every request of that organization reads: what it may hold is
// bounded, not only what one request may carry.
const (
	// MaxRules bounds the rules of one allowlist.
	MaxRules = 100
	// MaxRuleLabelBytes bounds a rule's label, as any name (directory.MaxNameLength).
	MaxRuleLabelBytes = directory.MaxNameLength
	// maxCIDRBytes is longer than any CIDR block's text (an IPv6 address with a zone and a
	// prefix length is under 64 bytes); a longer one is refused without being parsed or quoted.
	maxCIDRBytes = 64
)

// Deps are the dependencies of the operations (none yet: they take what they need from the
// Exec).
type Deps struct{}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{Path: "set_ip_allowlist", Access: activity.AccessRoot, Execute: activity.On(setAllowlist)},
	)
	reg.Submit(
		activity.Operation{
			Path:    "remove_ip_allowlist",
			Access:  activity.AccessRoot,
			Execute: activity.On(removeAllowlist),
		},
	)
	reg.Query(activity.QueryOp{Path: "get_ip_allowlist", Execute: activity.Query(getAllowlist)})
	return nil
}

// keyByPublicKey finds an API key of orgID by its public key.
func keyByPublicKey(x *activity.Exec, field, pub string) (*directory.APIKey, error) {
	ids, err := records.LookupIDs(
		x.Ctx,
		x.R,
		directory.KeyAPIKeyPublicKey,
		strings.ToLower(strings.TrimPrefix(pub, "0x")),
		directory.KindAPIKey,
		x.OrgID,
	)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, apierr.Invalid(field, "no API key with public key %s in this organization", pub)
	}
	return directory.LoadAPIKey(x.Ctx, x.Tx, x.OrgID, ids[0])
}

func setAllowlist(x *activity.Exec, in *wire.SetIpAllowlistIntent) (any, error) {
	if len(in.Rules) > MaxRules {
		return nil, apierr.Invalid("parameters.rules", "at most %d rules", MaxRules)
	}
	onErr := in.OnEvaluationError
	switch onErr {
	case "", "DENY", "ALLOW":
	default:
		return nil, apierr.Invalid("parameters.onEvaluationError", "must be ALLOW or DENY, got %q", onErr)
	}
	l := &directory.IPAllowlist{Enabled: true, OnError: onErr, Updated: x.Now, Rules: []directory.IPRule{}}
	for i, r := range in.Rules {
		f := "parameters.rules[" + strconv.Itoa(i) + "]"
		if len(r.Label) > MaxRuleLabelBytes {
			return nil, apierr.Invalid(f+".label", "must be at most %d bytes", MaxRuleLabelBytes)
		}
		if len(r.Cidr) > maxCIDRBytes {
			return nil, apierr.Invalid(f+".cidr", "not a CIDR block: longer than %d bytes", maxCIDRBytes)
		}
		p, err := netip.ParsePrefix(strings.TrimSpace(r.Cidr))
		if err != nil {
			if a, aerr := netip.ParseAddr(strings.TrimSpace(r.Cidr)); aerr == nil {
				p = netip.PrefixFrom(a, a.BitLen()) // a bare address is its /32 or /128
			} else {
				return nil, apierr.Invalid(f+".cidr", "not a CIDR block: %q", r.Cidr)
			}
		}
		l.Rules = append(l.Rules, directory.IPRule{CIDR: p.Masked().String(), Label: r.Label, CreatedAt: x.Now})
	}
	if in.Enabled != nil {
		l.Enabled = *in.Enabled
	}
	if l.Enabled && len(l.Rules) == 0 {
		// Refused rather than locking every credential out.
		return nil, apierr.Invalid(
			"parameters.rules",
			"an enabled allowlist needs at least one rule (it would refuse every request)",
		)
	}
	if in.PublicKey != "" {
		k, err := keyByPublicKey(x, "parameters.publicKey", in.PublicKey)
		if err != nil {
			return nil, err
		}
		k.IPAllowlist, k.UpdatedAt = l, x.Now
		return wire.SetIpAllowlistResult{}, directory.SaveAPIKey(x.Ctx, x.Tx, k)
	}
	o, err := directory.LoadOrganization(x.Ctx, x.Tx, x.OrgID)
	if err != nil {
		return nil, err
	}
	o.IPAllowlist, o.UpdatedAt = l, x.Now
	return wire.SetIpAllowlistResult{}, directory.SaveOrganization(x.Ctx, x.Tx, o)
}

func removeAllowlist(x *activity.Exec, in *wire.RemoveIpAllowlistIntent) (any, error) {
	if in.PublicKey != "" {
		k, err := keyByPublicKey(x, "parameters.publicKey", in.PublicKey)
		if err != nil {
			return nil, err
		}
		k.IPAllowlist, k.UpdatedAt = nil, x.Now
		return wire.RemoveIpAllowlistResult{}, directory.SaveAPIKey(x.Ctx, x.Tx, k)
	}
	o, err := directory.LoadOrganization(x.Ctx, x.Tx, x.OrgID)
	if err != nil {
		return nil, err
	}
	o.IPAllowlist, o.UpdatedAt = nil, x.Now
	return wire.RemoveIpAllowlistResult{}, directory.SaveOrganization(x.Ctx, x.Tx, o)
}

func getAllowlist(q *activity.Read, in *wire.GetIpAllowlistRequest) (any, error) {
	var l *directory.IPAllowlist
	if in.PublicKey != "" {
		ids, err := records.LookupIDs(
			q.Ctx,
			q.R,
			directory.KeyAPIKeyPublicKey,
			strings.ToLower(strings.TrimPrefix(in.PublicKey, "0x")),
			directory.KindAPIKey,
			q.OrgID,
		)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return nil, apierr.NotFoundf("no API key with public key %s in this organization", in.PublicKey)
		}
		k, err := directory.LoadAPIKey(q.Ctx, q.R, q.OrgID, ids[0])
		if err != nil {
			return nil, err
		}
		l = k.IPAllowlist
	} else {
		l = q.Caller.Target.IPAllowlist
	}
	out := wire.IpAllowlist{OrganizationId: q.OrgID, PublicKey: in.PublicKey, Rules: []wire.IpAllowlistRule{}}
	if l != nil {
		enabled := l.Enabled
		out.Enabled, out.OnEvaluationError = &enabled, l.OnError
		if out.OnEvaluationError == "" {
			out.OnEvaluationError = "DENY"
		}
		for _, r := range l.Rules {
			out.Rules = append(
				out.Rules,
				wire.IpAllowlistRule{
					Cidr:      r.CIDR,
					Label:     r.Label,
					CreatedAt: strconv.FormatInt(r.CreatedAt.UnixMilli(), 10),
				},
			)
		}
	}
	return wire.GetIpAllowlistResponse{Allowlist: out}, nil
}
