package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/latchkey/latchkey/internal/dashboard"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store"
)

// OrgSpec is a top-level organization to create.
type OrgSpec struct {
	OrgName      string
	UserName     string
	UserEmail    string
	APIPublicKey string
	APIKeyCurve  string // API_KEY_CURVE_*; default P-256
	APIKeyName   string
}

// Created names what CreateOrganization made.
type Created struct {
	OrganizationID string `json:"organizationId"`
	UserID         string `json:"userId"`
	APIKeyID       string `json:"apiKeyId"`
}

// CreateOrganization creates a top-level organization whose single root user holds one API key.
func (s *Server) CreateOrganization(ctx context.Context, spec OrgSpec) (Created, error) {
	if strings.TrimSpace(spec.OrgName) == "" {
		return Created{}, apierr.Required("org-name")
	}
	if spec.APIKeyCurve == "" {
		spec.APIKeyCurve = string(stamp.CurveP256)
	}
	if spec.APIKeyName == "" {
		spec.APIKeyName = "root"
	}
	now := time.Now().UTC()
	var out Created
	err := s.Store.Update(ctx, func(tx store.Tx) error {
		env := s.env(now)
		o := &directory.Organization{
			ID:        id.New(),
			Name:      strings.TrimSpace(spec.OrgName),
			Features:  []directory.Feature{},
			CreatedAt: now,
			UpdatedAt: now,
		}
		u, err := directory.CreateUser(
			ctx,
			tx,
			env,
			o.ID,
			directory.UserSpec{Name: spec.UserName, Email: spec.UserEmail, Field: "user",
				APIKeys: []directory.APIKeySpec{
					{Name: spec.APIKeyName, PublicKey: spec.APIPublicKey, Curve: spec.APIKeyCurve, Field: "api-key"},
				}},
		)
		if err != nil {
			return err
		}
		o.RootQuorum = directory.Quorum{UserIDs: []string{u.ID}, Threshold: 1}
		if err := directory.SaveOrganization(ctx, tx, o); err != nil {
			return err
		}
		keys, err := directory.UserAPIKeys(ctx, tx, u.ID)
		if err != nil || len(keys) != 1 {
			return apierr.Internalf(err, "reading back the API key")
		}
		out = Created{OrganizationID: o.ID, UserID: u.ID, APIKeyID: keys[0].ID}
		return nil
	})
	return out, err
}

// DevCredentials is what `serve --dev` writes to DIR/dev-credentials.json.
type DevCredentials struct {
	Created
	APIPublicKey  string `json:"apiPublicKey"`
	APIPrivateKey string `json:"apiPrivateKey"`
	APIBaseURL    string `json:"apiBaseUrl"`
	Curve         string `json:"curve"`
}

// DevCredentialsFile is the name of the --dev credentials file.
const DevCredentialsFile = "dev-credentials.json"

// EnsureDevOrganization creates the demo organization of --dev when the store has no
// organization yet, and writes its API key pair to the data directory. A store that already has
// organizations is used as it is.
func (s *Server) EnsureDevOrganization(ctx context.Context, apiBaseURL string) (*DevCredentials, bool, error) {
	var n int
	if err := s.Store.View(ctx, func(r store.Reader) error {
		var err error
		n, err = r.Count(ctx, directory.KindOrganization, "", 1)
		return err
	}); err != nil {
		return nil, false, err
	}
	path := filepath.Join(s.cfg.DataDir, DevCredentialsFile)
	if n > 0 {
		var dc DevCredentials
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &dc) == nil {
			return &dc, false, nil
		}
		return nil, false, nil
	}
	priv, pub, err := stamp.GenerateKey(stamp.CurveP256)
	if err != nil {
		return nil, false, err
	}
	c, err := s.CreateOrganization(
		ctx,
		OrgSpec{OrgName: "Demo Organization", UserName: "Demo Admin", APIPublicKey: pub, APIKeyName: "dev root key"},
	)
	if err != nil {
		return nil, false, err
	}
	dc := &DevCredentials{
		Created:       c,
		APIPublicKey:  pub,
		APIPrivateKey: priv,
		APIBaseURL:    apiBaseURL,
		Curve:         string(stamp.CurveP256),
	}
	b, _ := json.MarshalIndent(dc, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return nil, false, fmt.Errorf("writing %s: %w", path, err)
	}
	return dc, true, nil
}

// DevOperatorFile is where `serve --dev` writes the operator account it makes.
const DevOperatorFile = "dev-operator.json"

// DevOperator is the --dev operator account's sign-in.
type DevOperator struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	URL      string `json:"dashboardUrl"`
}

// EnsureDevOperator creates an operator account for the dashboard when there is none and writes
// its e-mail and a generated password to the data directory (--dev only).
func (s *Server) EnsureDevOperator(ctx context.Context, dashboardURL string) (*DevOperator, bool, error) {
	path := filepath.Join(s.cfg.DataDir, DevOperatorFile)
	n, err := dashboard.CountOperators(ctx, s.Store)
	if err != nil {
		return nil, false, err
	}
	if n > 0 {
		var d DevOperator
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &d) == nil {
			return &d, false, nil
		}
		return nil, false, nil
	}
	pw := make([]byte, 18)
	if _, err := rand.Read(pw); err != nil {
		return nil, false, err
	}
	d := &DevOperator{
		Email:    "operator@latchkey.dev",
		Password: base64.RawURLEncoding.EncodeToString(pw),
		URL:      dashboardURL,
	}
	if _, err := dashboard.CreateOperator(ctx, s.Store, d.Email, d.Password, time.Now().UTC()); err != nil {
		return nil, false, err
	}
	b, _ := json.MarshalIndent(d, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return nil, false, fmt.Errorf("writing %s: %w", path, err)
	}
	return d, true, nil
}
