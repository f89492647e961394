package authproxy

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

// Record kind and lookup key of proxy configurations.
const (
	KindConfig   = "auth_proxy_config"
	keyConfigOrg = "auth_proxy_config.org" // unique: one configuration per organization
)

// ProxyUserName and ProxyKeyName name the user and API key enabling the proxy creates.
const (
	ProxyUserName = "Auth Proxy"
	ProxyKeyName  = "auth proxy key"
)

// Config is an organization's auth proxy configuration. Its JSON (what `latchkey proxy show`
// prints and the dashboard reads) never carries the proxy key, not even sealed.
type Config struct {
	ID       string   `json:"configId"`
	OrgID    string   `json:"organizationId"`
	Settings Settings `json:"settings"`
	// ProxyUserID and ProxyAPIKeyID name the proxy user and its key while the proxy is enabled
	// (both are removed when it is disabled).
	ProxyUserID    string    `json:"proxyUserId,omitempty"`
	ProxyAPIKeyID  string    `json:"proxyApiKeyId,omitempty"`
	ProxyPublicKey string    `json:"proxyPublicKey,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`

	sealedKey []byte
}

// stored is a Config as the store keeps it: with the proxy's private key, sealed.
type stored struct {
	Config
	SealedProxyKey []byte `json:"sealedProxyKey,omitempty"`
}

func (c *Config) binding() custody.Binding {
	return custody.Binding{OrgID: c.OrgID, Kind: KindConfig, ID: c.ID}
}

// Manager creates, changes and reads proxy configurations. Every change is one store
// transaction; the proxy reads the configuration on each request, so a change applies to
// every running process at once, without a restart.
type Manager struct {
	Store     store.Store
	Custodian *custody.Custodian
	// Env is the environment user and key creation run in (limits, clock).
	Env func(now time.Time) directory.Env
	Now func() time.Time
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now().UTC()
}

// Enable turns the proxy on for orgID with settings s (s.Enabled is implied): it creates the
// configuration if the organization has none, and the proxy user with a fresh P-256 proxy API
// key whose private half is made and sealed inside custody. Enabling an enabled proxy is a
// 409; change it with Update.
func (m *Manager) Enable(ctx context.Context, orgID string, s Settings) (*Config, error) {
	s.Enabled = true
	return m.apply(ctx, orgID, s, true)
}

// Update replaces the settings of orgID's configuration. Turning Enabled on or off creates or
// removes the proxy user and key as Enable and Disable do.
func (m *Manager) Update(ctx context.Context, orgID string, s Settings) (*Config, error) {
	return m.apply(ctx, orgID, s, false)
}

// Disable turns the proxy off for orgID: the proxy user and its key are deleted (nothing can
// stamp with the key any more) and the configuration keeps its id and settings for a later
// Enable.
func (m *Manager) Disable(ctx context.Context, orgID string) (*Config, error) {
	c, err := m.Get(ctx, orgID)
	if err != nil {
		return nil, err
	}
	s := c.Settings
	s.Enabled = false
	return m.apply(ctx, orgID, s, false)
}

// Get returns orgID's configuration (404 when it has none).
func (m *Manager) Get(ctx context.Context, orgID string) (*Config, error) {
	var c *Config
	err := m.Store.View(ctx, func(r store.Reader) error {
		var err error
		c, err = loadByOrg(ctx, r, orgID)
		return err
	})
	return c, storeErr(err)
}

// ByConfigID returns the configuration configID (404 when there is none).
func (m *Manager) ByConfigID(ctx context.Context, configID string) (*Config, error) {
	var c *Config
	err := m.Store.View(ctx, func(r store.Reader) error {
		var err error
		c, err = load(ctx, r, configID)
		return err
	})
	return c, storeErr(err)
}

// Stamp signs body with the configuration's proxy key, as a client stamps a request, and
// returns the header to send it with. The key is unsealed inside custody for this one
// signature.
func (m *Manager) Stamp(c *Config, body []byte) (header, value string, err error) {
	if len(c.sealedKey) == 0 {
		return "", "", ErrDisabled
	}
	header, value, err = m.Custodian.StampWithAPIKey(c.sealedKey, c.binding(), body)
	if err != nil {
		return "", "", apierr.Internalf(err, "stamping with the proxy key")
	}
	return header, value, nil
}

// ErrDisabled is the answer for a configuration whose proxy is turned off.
var ErrDisabled = apierr.New(
	apierr.PermissionDenied,
	"AUTH_PROXY_DISABLED",
	"the auth proxy is disabled for this organization (latchkey proxy enable turns it on)",
)

func (m *Manager) apply(ctx context.Context, orgID string, s Settings, enabling bool) (*Config, error) {
	if orgID = strings.TrimSpace(orgID); orgID == "" {
		return nil, apierr.Required("organizationId")
	}
	s, err := s.Normalize()
	if err != nil {
		return nil, err
	}
	now := m.now()
	var out *Config
	err = m.Store.Update(ctx, func(tx store.Tx) error {
		org, err := directory.LoadOrganization(ctx, tx, orgID)
		if err != nil {
			if apierr.From(err).Code == apierr.NotFound {
				return apierr.NotFoundf("organization not found: %s", orgID)
			}
			return err
		}
		if org.ParentID != "" {
			return apierr.Invalid(
				"organizationId",
				"%s is a sub-organization; the auth proxy is configured on a top-level organization, whose sub-organizations it signs users up into",
				orgID,
			)
		}
		c, err := loadByOrg(ctx, tx, orgID)
		switch {
		case err != nil && apierr.From(err).Code == apierr.NotFound:
			if !enabling && !s.Enabled {
				return apierr.NotFoundf("the auth proxy was never enabled for organization %s; enable it first", orgID)
			}
			c = &Config{ID: id.New(), OrgID: orgID, CreatedAt: now}
		case err != nil:
			return err
		case enabling && c.Settings.Enabled:
			return apierr.New(
				apierr.AlreadyExists,
				"ALREADY_EXISTS",
				"the auth proxy is already enabled for organization %s (config %s); change it with update",
				orgID,
				c.ID,
			)
		}
		switch {
		case s.Enabled && c.ProxyUserID == "":
			if err := m.createProxyUser(ctx, tx, c, now); err != nil {
				return err
			}
		case !s.Enabled && c.ProxyUserID != "":
			if err := removeProxyUser(ctx, tx, c, now); err != nil {
				return err
			}
		}
		c.Settings, c.UpdatedAt = s, now
		if err := save(ctx, tx, c); err != nil {
			return err
		}
		out = c
		return nil
	})
	if err != nil {
		return nil, storeErr(err)
	}
	return out, nil
}

// createProxyUser makes the proxy user and its key. The key is of the proxy credential type,
// which the activity engine restricts to sign-up and login (activity.ProxySubmitPaths).
func (m *Manager) createProxyUser(ctx context.Context, tx store.Tx, c *Config, now time.Time) error {
	pub, sealed, err := m.Custodian.NewAPIKey(c.binding())
	if err != nil {
		return apierr.Internalf(err, "creating the proxy key")
	}
	env := directory.Env{Now: now, Limits: directory.DefaultLimits}
	if m.Env != nil {
		env = m.Env(now)
	}
	u, err := directory.CreateUser(ctx, tx, env, c.OrgID, directory.UserSpec{Name: ProxyUserName, Field: "proxyUser",
		APIKeys: []directory.APIKeySpec{
			{
				Name:           ProxyKeyName,
				PublicKey:      pub,
				Curve:          "API_KEY_CURVE_P256",
				CredentialType: directory.CredentialAuthProxy,
				Field:          "proxyUser.apiKeys[0]",
			},
		}})
	if err != nil {
		return err
	}
	keys, err := directory.UserAPIKeys(ctx, tx, u.ID)
	if err != nil {
		return err
	}
	if len(keys) != 1 {
		return apierr.Internalf(nil, "the proxy user has %d keys, want 1", len(keys))
	}
	c.ProxyUserID, c.ProxyAPIKeyID, c.ProxyPublicKey, c.sealedKey = u.ID, keys[0].ID, pub, sealed
	return nil
}

func removeProxyUser(ctx context.Context, tx store.Tx, c *Config, now time.Time) error {
	u, err := directory.LoadUser(ctx, tx, c.OrgID, c.ProxyUserID)
	switch {
	case err == nil:
		if err := directory.DeleteUser(ctx, tx, now, u); err != nil {
			return err
		}
	case apierr.From(err).Code != apierr.NotFound:
		return err
	}
	c.ProxyUserID, c.ProxyAPIKeyID, c.ProxyPublicKey, c.sealedKey = "", "", "", nil
	return nil
}

func save(ctx context.Context, tx store.Tx, c *Config) error {
	return records.Save(
		ctx,
		tx,
		KindConfig,
		c.ID,
		c.OrgID,
		c.CreatedAt,
		c.UpdatedAt,
		stored{Config: *c, SealedProxyKey: c.sealedKey},
		store.Key{Name: keyConfigOrg, Value: c.OrgID, Unique: true},
	)
}

func load(ctx context.Context, r store.Reader, configID string) (*Config, error) {
	s, err := records.Load[stored](ctx, r, KindConfig, "", configID, "auth proxy configuration")
	if err != nil {
		return nil, err
	}
	c := s.Config
	c.sealedKey = s.SealedProxyKey
	return &c, nil
}

func loadByOrg(ctx context.Context, r store.Reader, orgID string) (*Config, error) {
	ids, err := records.LookupIDs(ctx, r, keyConfigOrg, orgID, KindConfig, orgID)
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, apierr.NotFoundf("no auth proxy configuration for organization %s", orgID)
	}
	return load(ctx, r, ids[0])
}

func storeErr(err error) error {
	if err == nil {
		return nil
	}
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return &apierr.Error{
		Code:        apierr.Unavailable,
		TurnkeyCode: "UNAVAILABLE",
		Message:     "the store is unavailable; try again",
		Cause:       err,
	}
}
