package directory

import (
	"context"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
)

// Record kinds.
const (
	KindOrganization  = "organization"
	KindUser          = "user"
	KindAPIKey        = "api_key"
	KindAuthenticator = "authenticator"
	KindUserTag       = "user_tag"
	KindOAuthProvider = "oauth_provider"
)

// Lookup key names.
const (
	KeyAPIKeyPublicKey     = "api_key.public_key"     // value: public key hex (lowercase)
	KeyAPIKeyOrgPublicKey  = "api_key.org_public_key" // unique: org/pub
	KeyAPIKeyUser          = "api_key.user"           // value: user id
	KeyAuthCredentialID    = "authenticator.credential_id"
	KeyAuthOrgCredentialID = "authenticator.org_credential_id" // unique: org/credentialId
	KeyAuthUser            = "authenticator.user"
	// KeyUserEmail and KeyUserPhone index only proven contacts (User.EmailUnproven): every
	// look-up that finds a user or a sub-organization by contact for a login or an account
	// look-up goes through them, so an unproven contact never matches one.
	KeyUserEmail = "user.email"        // lowercased
	KeyUserPhone = "user.phone_number" // as given (E.164)
	// KeyUserEmailUnproven and KeyUserPhoneUnproven index unproven contacts, for the
	// operator's search only.
	KeyUserEmailUnproven = "user.email_unproven"
	KeyUserPhoneUnproven = "user.phone_number_unproven"
	KeyUserName          = "user.name"       // org/name, for search
	KeyUserTagName       = "user_tag.name"   // unique: org/name
	KeyUserTagMember     = "user_tag.member" // value: user id
	KeyOAuthUser         = "oauth_provider.user"
	KeyOAuthSubject      = "oauth_provider.subject" // iss/sub/aud
	KeyOrgName           = "organization.name"      // lowercased, for search
	// KeyUserNameAny holds a user's name as given, in every organization: list_suborgs
	// filtered by USERNAME pages through a parent's sub-organizations that own a user carrying
	// it (store.ListOptions.OwnerOf). The store's migrations gave it to the users stored before.
	KeyUserNameAny = "user.name_any"
)

// Quorum is an organization's root quorum.
type Quorum struct {
	UserIDs   []string `json:"userIds"`
	Threshold int      `json:"threshold"`
}

// Feature is an organization feature flag.
type Feature struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Organization is an organization or sub-organization.
type Organization struct {
	ID                   string    `json:"id"`
	Name                 string    `json:"name"`
	ParentID             string    `json:"parentId,omitempty"`
	RootQuorum           Quorum    `json:"rootQuorum"`
	Features             []Feature `json:"features"`
	DisableEmailRecovery bool      `json:"disableEmailRecovery,omitempty"`
	DisableEmailAuth     bool      `json:"disableEmailAuth,omitempty"`
	DisableSMSAuth       bool      `json:"disableSmsAuth,omitempty"`
	DisableOTPEmailAuth  bool      `json:"disableOtpEmailAuth,omitempty"`
	// IPAllowlist applies to every request stamped by this organization's credentials.
	IPAllowlist *IPAllowlist `json:"ipAllowlist,omitempty"`
	// WebhookEndpoints counts the organization's webhook endpoints, so activities of
	// organizations without any skip the webhook outbox without a read.
	WebhookEndpoints int       `json:"webhookEndpoints,omitempty"`
	CreatedAt        time.Time `json:"createdAt"`
	UpdatedAt        time.Time `json:"updatedAt"`
}

// IsRoot reports whether userID is in the root quorum.
func (o *Organization) IsRoot(userID string) bool {
	for _, u := range o.RootQuorum.UserIDs {
		if u == userID {
			return true
		}
	}
	return false
}

// User is a user of one organization.
type User struct {
	ID          string `json:"id"`
	OrgID       string `json:"orgId"`
	Name        string `json:"name"`
	Email       string `json:"email,omitempty"`
	PhoneNumber string `json:"phoneNumber,omitempty"`
	// EmailUnproven and PhoneUnproven mark a contact nobody vouched for: written through the
	// auth proxy or by a sub-organization's own users without a verification token for it
	// (see VouchedContacts). Such a contact is shown but never used to find the user for a
	// login or an account look-up; proving it later (update_user_email with a verification
	// token) clears the mark. Records written before the mark existed count as proven.
	EmailUnproven bool      `json:"emailUnproven,omitempty"`
	PhoneUnproven bool      `json:"phoneUnproven,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// VouchedContacts reports whether the contacts the caller writes into org are vouched for
// without a verification token. A top-level organization vouches for its own users (no one
// above it looks them up). A sub-organization's contacts are looked up by its parent (the
// auth proxy's account look-up, list_suborgs, OTP login), so only the parent's own users
// vouch for them: not the sub-organization's users (an end user could claim anybody's
// address) and not the auth proxy key (anybody on the internet can sign up through it).
func VouchedContacts(c *Caller, org *Organization) bool {
	if org.ParentID == "" {
		return c == nil || c.CredentialType != CredentialAuthProxy
	}
	return c != nil && c.CredentialType != CredentialAuthProxy && c.Org != nil && c.Org.ID != org.ID
}

// APIKey is the public half of a user's API key.
type APIKey struct {
	ID                string    `json:"id"`
	OrgID             string    `json:"orgId"`
	UserID            string    `json:"userId"`
	Name              string    `json:"name"`
	PublicKey         string    `json:"publicKey"` // lowercase hex
	Curve             string    `json:"curve"`     // API_KEY_CURVE_*
	CredentialType    string    `json:"credentialType"`
	ExpirationSeconds string    `json:"expirationSeconds,omitempty"`
	ExpiresAt         time.Time `json:"expiresAt,omitzero"`
	SessionProfileID  string    `json:"sessionProfileId,omitempty"`
	// IPAllowlist applies to requests stamped by this key only.
	IPAllowlist *IPAllowlist `json:"ipAllowlist,omitempty"`
	CreatedAt   time.Time    `json:"createdAt"`
	UpdatedAt   time.Time    `json:"updatedAt"`
}

// Expired reports whether the key has expired at now.
func (k *APIKey) Expired(now time.Time) bool {
	return !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt)
}

// Authenticator is a registered passkey.
type Authenticator struct {
	ID              string    `json:"id"`
	OrgID           string    `json:"orgId"`
	UserID          string    `json:"userId"`
	Name            string    `json:"name"`
	CredentialID    string    `json:"credentialId"` // base64url, no padding
	COSEPublicKey   []byte    `json:"cosePublicKey"`
	PublicKey       string    `json:"publicKey"` // display form
	Alg             int       `json:"alg"`
	AAGUID          string    `json:"aaguid"`
	AttestationType string    `json:"attestationType"`
	Transports      []string  `json:"transports"`
	SignCount       uint32    `json:"signCount"`
	CreatedAt       time.Time `json:"createdAt"`
	UpdatedAt       time.Time `json:"updatedAt"`
}

// UserTag is a named set of users.
type UserTag struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Name      string    `json:"name"`
	UserIDs   []string  `json:"userIds"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// OAuthProvider links an OIDC identity (issuer, subject, audience) to a user.
type OAuthProvider struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	UserID    string    `json:"userId"`
	Name      string    `json:"name"`
	Issuer    string    `json:"issuer"`
	Audience  string    `json:"audience"`
	Subject   string    `json:"subject"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// ---- loading and saving (through internal/records) ----

func load[T any](ctx context.Context, r store.Reader, kind, id, what string) (*T, error) {
	// Ownership is checked by each Load function on the decoded record (an organization's
	// store owner is its parent).
	return records.Load[T](ctx, r, kind, "", id, what)
}

func save(
	ctx context.Context,
	tx store.Tx,
	kind, id, orgID string,
	created, updated time.Time,
	v any,
	keys ...store.Key,
) error {
	return records.Save(ctx, tx, kind, id, orgID, created, updated, v, keys...)
}

func listAll[T any](ctx context.Context, r store.Reader, kind, orgID string) ([]*T, error) {
	return records.List[T](ctx, r, kind, orgID, store.ListOptions{})
}

func lookupAll[T any](ctx context.Context, r store.Reader, key, value, kind string) ([]*T, error) {
	return records.LookupAll[T](ctx, r, key, value, kind, "")
}

// LoadOrganization loads an organization.
func LoadOrganization(ctx context.Context, r store.Reader, id string) (*Organization, error) {
	return load[Organization](ctx, r, KindOrganization, id, "organization")
}

// SaveOrganization writes an organization.
func SaveOrganization(ctx context.Context, tx store.Tx, o *Organization) error {
	return save(ctx, tx, KindOrganization, o.ID, o.ParentID, o.CreatedAt, o.UpdatedAt, o,
		store.Key{Name: KeyOrgName, Value: strings.ToLower(o.Name)})
}

// ListSubOrganizations lists the sub-organizations of parentID ("" lists top-level ones).
func ListSubOrganizations(
	ctx context.Context,
	r store.Reader,
	parentID string,
	opts store.ListOptions,
) ([]*Organization, error) {
	return records.List[Organization](ctx, r, KindOrganization, parentID, opts)
}

// LoadUser loads a user and checks it belongs to orgID.
func LoadUser(ctx context.Context, r store.Reader, orgID, id string) (*User, error) {
	u, err := load[User](ctx, r, KindUser, id, "user")
	if err != nil {
		return nil, err
	}
	if u.OrgID != orgID {
		return nil, apierr.NotFoundf("user not found: %s", id)
	}
	return u, nil
}

// SaveUser writes a user.
func SaveUser(ctx context.Context, tx store.Tx, u *User) error {
	keys := []store.Key{{Name: KeyUserName, Value: u.OrgID + "/" + u.Name}, {Name: KeyUserNameAny, Value: u.Name}}
	if u.Email != "" {
		name := KeyUserEmail
		if u.EmailUnproven {
			name = KeyUserEmailUnproven
		}
		keys = append(keys, store.Key{Name: name, Value: strings.ToLower(u.Email)})
	}
	if u.PhoneNumber != "" {
		name := KeyUserPhone
		if u.PhoneUnproven {
			name = KeyUserPhoneUnproven
		}
		keys = append(keys, store.Key{Name: name, Value: u.PhoneNumber})
	}
	return save(ctx, tx, KindUser, u.ID, u.OrgID, u.CreatedAt, u.UpdatedAt, u, keys...)
}

// ListUsers lists an organization's users.
func ListUsers(ctx context.Context, r store.Reader, orgID string) ([]*User, error) {
	return listAll[User](ctx, r, KindUser, orgID)
}

// LoadAPIKey loads an API key of orgID.
func LoadAPIKey(ctx context.Context, r store.Reader, orgID, id string) (*APIKey, error) {
	k, err := load[APIKey](ctx, r, KindAPIKey, id, "API key")
	if err != nil {
		return nil, err
	}
	if k.OrgID != orgID {
		return nil, apierr.NotFoundf("API key not found: %s", id)
	}
	return k, nil
}

// SaveAPIKey writes an API key; a public key can be registered once per organization.
func SaveAPIKey(ctx context.Context, tx store.Tx, k *APIKey) error {
	err := save(ctx, tx, KindAPIKey, k.ID, k.OrgID, k.CreatedAt, k.UpdatedAt, k,
		store.Key{Name: KeyAPIKeyPublicKey, Value: k.PublicKey},
		store.Key{Name: KeyAPIKeyOrgPublicKey, Value: k.OrgID + "/" + k.PublicKey, Unique: true},
		store.Key{Name: KeyAPIKeyUser, Value: k.UserID})
	if e := apierr.From(err); err != nil && e.Code == apierr.AlreadyExists {
		return apierr.New(
			apierr.AlreadyExists,
			"CREDENTIAL_CONFLICT",
			"an API key with public key %s already exists in this organization",
			k.PublicKey,
		)
	}
	return err
}

// UserAPIKeys lists a user's API keys, oldest first.
func UserAPIKeys(ctx context.Context, r store.Reader, userID string) ([]*APIKey, error) {
	keys, err := lookupAll[APIKey](ctx, r, KeyAPIKeyUser, userID, KindAPIKey)
	sortByCreated(keys, func(k *APIKey) (time.Time, string) { return k.CreatedAt, k.ID })
	return keys, err
}

// LoadAuthenticator loads an authenticator of orgID.
func LoadAuthenticator(ctx context.Context, r store.Reader, orgID, id string) (*Authenticator, error) {
	a, err := load[Authenticator](ctx, r, KindAuthenticator, id, "authenticator")
	if err != nil {
		return nil, err
	}
	if a.OrgID != orgID {
		return nil, apierr.NotFoundf("authenticator not found: %s", id)
	}
	return a, nil
}

// SaveAuthenticator writes an authenticator; a credential id can be registered once per
// organization.
func SaveAuthenticator(ctx context.Context, tx store.Tx, a *Authenticator) error {
	err := save(ctx, tx, KindAuthenticator, a.ID, a.OrgID, a.CreatedAt, a.UpdatedAt, a,
		store.Key{Name: KeyAuthCredentialID, Value: a.CredentialID},
		store.Key{Name: KeyAuthOrgCredentialID, Value: a.OrgID + "/" + a.CredentialID, Unique: true},
		store.Key{Name: KeyAuthUser, Value: a.UserID})
	if e := apierr.From(err); err != nil && e.Code == apierr.AlreadyExists {
		return apierr.New(
			apierr.AlreadyExists,
			"CREDENTIAL_CONFLICT",
			"an authenticator with credential id %s already exists in this organization",
			a.CredentialID,
		)
	}
	return err
}

// UserAuthenticators lists a user's authenticators, oldest first.
func UserAuthenticators(ctx context.Context, r store.Reader, userID string) ([]*Authenticator, error) {
	as, err := lookupAll[Authenticator](ctx, r, KeyAuthUser, userID, KindAuthenticator)
	sortByCreated(as, func(a *Authenticator) (time.Time, string) { return a.CreatedAt, a.ID })
	return as, err
}

// LoadUserTag loads a user tag of orgID.
func LoadUserTag(ctx context.Context, r store.Reader, orgID, id string) (*UserTag, error) {
	t, err := load[UserTag](ctx, r, KindUserTag, id, "user tag")
	if err != nil {
		return nil, err
	}
	if t.OrgID != orgID {
		return nil, apierr.NotFoundf("user tag not found: %s", id)
	}
	return t, nil
}

// SaveUserTag writes a user tag; tag names are unique per organization.
func SaveUserTag(ctx context.Context, tx store.Tx, t *UserTag) error {
	keys := []store.Key{{Name: KeyUserTagName, Value: t.OrgID + "/" + t.Name, Unique: true}}
	for _, u := range t.UserIDs {
		keys = append(keys, store.Key{Name: KeyUserTagMember, Value: u})
	}
	err := save(ctx, tx, KindUserTag, t.ID, t.OrgID, t.CreatedAt, t.UpdatedAt, t, keys...)
	if e := apierr.From(err); err != nil && e.Code == apierr.AlreadyExists {
		return apierr.New(apierr.AlreadyExists, "ALREADY_EXISTS", "a user tag named %q already exists", t.Name)
	}
	return err
}

// ListUserTags lists an organization's user tags.
func ListUserTags(ctx context.Context, r store.Reader, orgID string) ([]*UserTag, error) {
	return listAll[UserTag](ctx, r, KindUserTag, orgID)
}

// UserTagIDs lists the ids of the tags a user carries.
func UserTagIDs(ctx context.Context, r store.Reader, userID string) ([]string, error) {
	refs, err := r.Lookup(ctx, KeyUserTagMember, userID)
	if err != nil {
		return nil, apierr.Internalf(err, "looking up user tags")
	}
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		if ref.Kind == KindUserTag {
			out = append(out, ref.ID)
		}
	}
	sortStrings(out)
	return out, nil
}

// UserOAuthProviders lists a user's OAuth providers.
func UserOAuthProviders(ctx context.Context, r store.Reader, userID string) ([]*OAuthProvider, error) {
	ps, err := lookupAll[OAuthProvider](ctx, r, KeyOAuthUser, userID, KindOAuthProvider)
	sortByCreated(ps, func(p *OAuthProvider) (time.Time, string) { return p.CreatedAt, p.ID })
	return ps, err
}

// SaveOAuthProvider writes an OAuth provider link.
func SaveOAuthProvider(ctx context.Context, tx store.Tx, p *OAuthProvider) error {
	return save(ctx, tx, KindOAuthProvider, p.ID, p.OrgID, p.CreatedAt, p.UpdatedAt, p,
		store.Key{Name: KeyOAuthUser, Value: p.UserID},
		store.Key{Name: KeyOAuthSubject, Value: p.Issuer + "\x00" + p.Subject + "\x00" + p.Audience})
}

// Delete removes a record.
func Delete(ctx context.Context, tx store.Tx, kind, id string) error {
	return records.Delete(ctx, tx, kind, id)
}

// UsersByEmail finds the users of orgID with the e-mail address.
func UsersByEmail(ctx context.Context, r store.Reader, orgID, email string) ([]*User, error) {
	us, err := lookupAll[User](ctx, r, KeyUserEmail, strings.ToLower(email), KindUser)
	if err != nil {
		return nil, err
	}
	out := us[:0]
	for _, u := range us {
		if u.OrgID == orgID {
			out = append(out, u)
		}
	}
	return out, nil
}
