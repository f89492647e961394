package directory

import (
	"slices"

	"github.com/latchkey/latchkey/internal/hot"
)

// CallerCache holds what ResolveAPIKey reads (the organization a request names, its parent, the
// API key and its user), decoded, per (organization, public key), valid while neither
// organization has changed (package hot). Only resolutions that found the key are kept: a key
// added later is always looked for in the store.
type CallerCache = hot.Cache[*resolvedKey]

// NewCallerCache returns an empty cache over v.
func NewCallerCache(v *hot.Versions) *CallerCache { return hot.NewCache[*resolvedKey](v, 0) }

// resolvedKey is shared by every request that hits it: never modified, copied into each Caller.
type resolvedKey struct {
	t, parent *Organization
	k         *APIKey
	u         *User
}

func callerKey(targetOrgID, publicKey string) string { return targetOrgID + "\x00" + publicKey }

// caller builds a request's Caller from a cached or freshly read resolution, with copies of
// everything the request may touch.
func (e *resolvedKey) caller(publicKey string) *Caller {
	c := &Caller{Target: e.t.clone(), CredentialID: e.k.ID, CredentialType: e.k.CredentialType, PublicKey: publicKey,
		SessionProfileID: e.k.SessionProfileID, KeyAllowlist: e.k.IPAllowlist.clone(), User: e.u.clone()}
	if e.k.OrgID == e.t.ID {
		c.Org = c.Target
	} else {
		c.Org, c.ParentAccess = e.parent.clone(), true
	}
	return c
}

// prepare parses what would otherwise be parsed lazily on first use, before the value is
// shared.
func (e *resolvedKey) prepare() {
	for _, l := range []*IPAllowlist{e.t.IPAllowlist, e.k.IPAllowlist} {
		l.parse()
	}
	if e.parent != nil {
		e.parent.IPAllowlist.parse()
	}
}

func (o *Organization) clone() *Organization {
	if o == nil {
		return nil
	}
	c := *o
	c.RootQuorum.UserIDs = slices.Clone(o.RootQuorum.UserIDs)
	c.Features = slices.Clone(o.Features)
	c.IPAllowlist = o.IPAllowlist.clone()
	return &c
}

func (u *User) clone() *User {
	c := *u
	return &c
}

func (l *IPAllowlist) clone() *IPAllowlist {
	if l == nil {
		return nil
	}
	c := *l
	c.Rules = slices.Clone(l.Rules)
	c.parsed = slices.Clone(l.parsed)
	return &c
}
