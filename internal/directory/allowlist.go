package directory

import (
	"net/netip"
	"time"
)

// IPAllowlist limits where requests stamped by an organization's credentials (or by one API
// key) may come from.
type IPAllowlist struct {
	Enabled bool      `json:"enabled"`
	Rules   []IPRule  `json:"rules"`
	OnError string    `json:"onEvaluationError,omitempty"` // ALLOW or DENY (default)
	Updated time.Time `json:"updatedAt"`
	parsed  []netip.Prefix
}

// parse fills parsed from Rules, once.
func (l *IPAllowlist) parse() {
	if l == nil || l.parsed != nil {
		return
	}
	for _, r := range l.Rules {
		if p, err := netip.ParsePrefix(r.CIDR); err == nil {
			l.parsed = append(l.parsed, p.Masked())
		}
	}
}

// IPRule is one allowed CIDR block.
type IPRule struct {
	CIDR      string    `json:"cidr"`
	Label     string    `json:"label,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Allows reports whether a request from addr passes the allowlist. A disabled or absent list
// allows everything; an unknown client address follows OnError.
func (l *IPAllowlist) Allows(addr netip.Addr, known bool) bool {
	if l == nil || !l.Enabled {
		return true
	}
	if !known {
		return l.OnError == "ALLOW"
	}
	l.parse()
	addr = addr.Unmap()
	for _, p := range l.parsed {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
