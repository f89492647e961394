package credentials

import (
	"fmt"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/ops/login"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/session"
	"github.com/latchkey/latchkey/internal/wire"
)

// Deps are what these operations need from the server configuration.
type Deps struct {
	Env func(x *activity.Exec) directory.Env
}

// DefaultSessionSeconds is the default lifetime of a read-write session key (15 minutes).
const DefaultSessionSeconds = login.DefaultSessionSeconds

// MaxSessionSeconds bounds a session's lifetime (one year).
const MaxSessionSeconds = login.MaxSessionSeconds

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{
			Path:   "create_api_keys",
			Access: activity.AccessSelf,
			Execute: activity.OnAny(
				d.createAPIKeys,
				(*wire.CreateApiKeysIntentV2)(nil),
				(*wire.CreateApiKeysIntent)(nil),
			),
			SelfUser: activity.UserAny(
				intentUser,
				(*wire.CreateApiKeysIntentV2)(nil),
				(*wire.CreateApiKeysIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:     "delete_api_keys",
			Access:   activity.AccessSelf,
			Execute:  activity.On(deleteAPIKeys),
			SelfUser: activity.UserAny(intentUser, (*wire.DeleteApiKeysIntent)(nil)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:   "create_authenticators",
			Access: activity.AccessSelf,
			Execute: activity.OnAny(
				d.createAuthenticators,
				(*wire.CreateAuthenticatorsIntentV2)(nil),
				(*wire.CreateAuthenticatorsIntent)(nil),
			),
			SelfUser: activity.UserAny(
				intentUser,
				(*wire.CreateAuthenticatorsIntentV2)(nil),
				(*wire.CreateAuthenticatorsIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:     "delete_authenticators",
			Access:   activity.AccessSelf,
			Execute:  activity.On(deleteAuthenticators),
			SelfUser: activity.UserAny(intentUser, (*wire.DeleteAuthenticatorsIntent)(nil)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:   "create_read_write_session",
			Access: activity.AccessSelf,
			Execute: activity.OnAny(
				d.createReadWriteSession,
				(*wire.CreateReadWriteSessionIntentV2)(nil),
				(*wire.CreateReadWriteSessionIntent)(nil),
			),
			SelfUser: activity.UserAny(
				sessionUser,
				(*wire.CreateReadWriteSessionIntentV2)(nil),
				(*wire.CreateReadWriteSessionIntent)(nil),
			),
		},
	)

	reg.Submit(
		activity.Operation{
			Path:    "create_read_only_session",
			Access:  activity.AccessAnyUser,
			Execute: activity.OnAny(createReadOnlySession, (*wire.CreateReadOnlySessionIntent)(nil)),
		},
	)

	reg.Query(activity.QueryOp{Path: "get_api_key", Execute: activity.Query(getAPIKey)})
	reg.Query(activity.QueryOp{Path: "get_api_keys", Execute: activity.Query(getAPIKeys)})
	reg.Query(activity.QueryOp{Path: "get_authenticator", Execute: activity.Query(getAuthenticator)})
	reg.Query(activity.QueryOp{Path: "get_authenticators", Execute: activity.Query(getAuthenticators)})
	return nil
}

// intentUser is the userId member of a credential intent.
func intentUser(_ *activity.Exec, intent any) string {
	switch in := intent.(type) {
	case *wire.CreateApiKeysIntentV2:
		return in.UserId
	case *wire.CreateApiKeysIntent:
		return in.UserId
	case *wire.DeleteApiKeysIntent:
		return in.UserId
	case *wire.CreateAuthenticatorsIntentV2:
		return in.UserId
	case *wire.CreateAuthenticatorsIntent:
		return in.UserId
	case *wire.DeleteAuthenticatorsIntent:
		return in.UserId
	}
	return ""
}

func loadUser(x *activity.Exec, userID string) (*directory.User, error) {
	u, err := directory.LoadUser(x.Ctx, x.Tx, x.OrgID, userID)
	if err != nil {
		return nil, apierr.Invalid("parameters.userId", "no user %s in this organization", userID)
	}
	return u, nil
}

func (d Deps) createAPIKeys(x *activity.Exec, intent any) (any, error) {
	var userID string
	var specs []directory.APIKeySpec
	switch in := intent.(type) {
	case *wire.CreateApiKeysIntentV2:
		userID, specs = in.UserId, directory.APIKeysV2("parameters.apiKeys", in.ApiKeys)
	case *wire.CreateApiKeysIntent:
		userID, specs = in.UserId, directory.APIKeysV1("parameters.apiKeys", in.ApiKeys)
	}
	const f = "parameters.apiKeys"
	if err := organizations.CheckCount(f, len(specs), organizations.MaxAPIKeysPerRequest, "API keys"); err != nil {
		return nil, err
	}
	ids, err := createFor(
		x,
		userID,
		"parameters.apiKeys",
		"API key",
		specs,
		func(u *directory.User, s directory.APIKeySpec) (string, error) {
			k, err := directory.CreateAPIKey(x.Ctx, x.Tx, d.Env(x), u, s)
			if err != nil {
				return "", err
			}
			return k.ID, nil
		},
	)
	if err != nil {
		return nil, err
	}
	return wire.CreateApiKeysResult{ApiKeyIds: ids}, nil
}

func deleteAPIKeys(x *activity.Exec, in *wire.DeleteApiKeysIntent) (any, error) {
	err := deleteFor(
		x,
		in.UserId,
		"parameters.apiKeyIds",
		"API key",
		directory.KindAPIKey,
		in.ApiKeyIds,
		func(id string) (string, error) {
			k, err := directory.LoadAPIKey(x.Ctx, x.Tx, x.OrgID, id)
			if err != nil {
				return "", err
			}
			return k.UserID, nil
		},
	)
	if err != nil {
		return nil, err
	}
	return wire.DeleteApiKeysResult{ApiKeyIds: in.ApiKeyIds}, nil
}

func (d Deps) createAuthenticators(x *activity.Exec, intent any) (any, error) {
	var userID string
	var specs []directory.AuthenticatorSpec
	switch in := intent.(type) {
	case *wire.CreateAuthenticatorsIntentV2:
		userID, specs = in.UserId, directory.AuthenticatorsV2("parameters.authenticators", in.Authenticators)
	case *wire.CreateAuthenticatorsIntent:
		userID, specs = in.UserId, directory.AuthenticatorsV1("parameters.authenticators", in.Authenticators)
	}
	if err := organizations.CheckAuthenticators("parameters.authenticators", specs); err != nil {
		return nil, err
	}
	ids, err := createFor(
		x,
		userID,
		"parameters.authenticators",
		"authenticator",
		specs,
		func(u *directory.User, s directory.AuthenticatorSpec) (string, error) {
			a, err := directory.CreateAuthenticator(x.Ctx, x.Tx, d.Env(x), u, s)
			if err != nil {
				return "", err
			}
			return a.ID, nil
		},
	)
	if err != nil {
		return nil, err
	}
	return wire.CreateAuthenticatorsResult{AuthenticatorIds: ids}, nil
}

func deleteAuthenticators(x *activity.Exec, in *wire.DeleteAuthenticatorsIntent) (any, error) {
	err := deleteFor(
		x,
		in.UserId,
		"parameters.authenticatorIds",
		"authenticator",
		directory.KindAuthenticator,
		in.AuthenticatorIds,
		func(id string) (string, error) {
			a, err := directory.LoadAuthenticator(x.Ctx, x.Tx, x.OrgID, id)
			if err != nil {
				return "", err
			}
			return a.UserID, nil
		},
	)
	if err != nil {
		return nil, err
	}
	return wire.DeleteAuthenticatorsResult{AuthenticatorIds: in.AuthenticatorIds}, nil
}

// createFor creates, for the user userID of this organization, one credential per spec, and
// returns their ids; field names the list in errors, what one of its items.
func createFor[S any](
	x *activity.Exec,
	userID, field, what string,
	specs []S,
	create func(*directory.User, S) (string, error),
) ([]string, error) {
	if len(specs) == 0 {
		return nil, apierr.Invalid(field, "at least one %s is required", what)
	}
	u, err := loadUser(x, userID)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(specs))
	for _, s := range specs {
		id, err := create(u, s)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// deleteFor deletes the records of kind named by ids, each of which must belong to the user
// userID of this organization (owner returns the user a record belongs to).
func deleteFor(
	x *activity.Exec,
	userID, field, what, kind string,
	ids []string,
	owner func(id string) (string, error),
) error {
	if len(ids) == 0 {
		return apierr.Invalid(field, "at least one %s id is required", what)
	}
	if err := organizations.CheckIDs(field, ids, organizations.MaxIDsPerRequest, what+" ids"); err != nil {
		return err
	}
	if _, err := loadUser(x, userID); err != nil {
		return err
	}
	for i, id := range ids {
		if u, err := owner(id); err != nil || u != userID {
			return apierr.Invalid(field+"["+strconv.Itoa(i)+"]", "user %s has no %s %s", userID, what, id)
		}
		if err := directory.Delete(x.Ctx, x.Tx, kind, id); err != nil {
			return err
		}
	}
	return nil
}

func sessionUser(x *activity.Exec, intent any) string {
	if in, ok := intent.(*wire.CreateReadWriteSessionIntentV2); ok && in.UserId != "" {
		return in.UserId
	}
	if in, ok := intent.(*wire.CreateReadWriteSessionIntent); ok && in.Email != "" {
		if us, err := directory.UsersByEmail(x.Ctx, x.Tx, x.OrgID, in.Email); err == nil && len(us) == 1 {
			return us[0].ID
		}
		return ""
	}
	return x.Caller.User.ID
}

func (d Deps) createReadWriteSession(x *activity.Exec, intent any) (any, error) {
	var target, name, expiration string
	var invalidate bool
	userID := sessionUser(x, intent)
	switch in := intent.(type) {
	case *wire.CreateReadWriteSessionIntentV2:
		target, name, expiration = in.TargetPublicKey, in.ApiKeyName, in.ExpirationSeconds
		invalidate = in.InvalidateExisting != nil && *in.InvalidateExisting
	case *wire.CreateReadWriteSessionIntent:
		target, name, expiration = in.TargetPublicKey, in.ApiKeyName, in.ExpirationSeconds
		if userID == "" {
			return nil, apierr.Invalid("parameters.email", "no single user with e-mail %q in this organization", in.Email)
		}
	}
	u, err := loadUser(x, userID)
	if err != nil {
		return nil, err
	}
	secs, err := login.Seconds("parameters.expirationSeconds", expiration, DefaultSessionSeconds, MaxSessionSeconds)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = fmt.Sprintf("Read Write Session - %s", x.Now.Format(time.RFC3339))
	}
	if invalidate {
		keys, err := directory.UserAPIKeys(x.Ctx, x.Tx, u.ID)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if k.CredentialType == directory.CredentialReadWriteSession {
				if err := directory.Delete(x.Ctx, x.Tx, directory.KindAPIKey, k.ID); err != nil {
					return nil, err
				}
			}
		}
	}
	pub, bundle, err := custody.NewSessionCredential(target)
	if err != nil {
		return nil, apierr.Invalid(
			"parameters.targetPublicKey",
			"must be a P-256 public key in hex (compressed or uncompressed): %v",
			err,
		)
	}
	k, err := directory.CreateAPIKey(x.Ctx, x.Tx, d.Env(x), u, directory.APIKeySpec{
		Name: name, PublicKey: pub, Curve: "API_KEY_CURVE_P256", ExpirationSeconds: strconv.FormatInt(secs, 10),
		CredentialType: directory.CredentialReadWriteSession, Field: "parameters",
	})
	if err != nil {
		return nil, err
	}
	org, err := directory.LoadOrganization(x.Ctx, x.Tx, x.OrgID)
	if err != nil {
		return nil, err
	}
	res := wire.CreateReadWriteSessionResultV2{OrganizationId: org.ID, OrganizationName: org.Name, UserId: u.ID,
		Username: u.Name, ApiKeyId: k.ID, CredentialBundle: bundle}
	if _, ok := intent.(*wire.CreateReadWriteSessionIntent); ok {
		return wire.CreateReadWriteSessionResult(res), nil
	}
	return res, nil
}

func getAPIKey(q *activity.Read, in *wire.GetApiKeyRequest) (any, error) {
	k, err := directory.LoadAPIKey(q.Ctx, q.R, q.OrgID, in.ApiKeyId)
	if err != nil {
		return nil, err
	}
	return wire.GetApiKeyResponse{ApiKey: k.ToWire()}, nil
}

func getAPIKeys(q *activity.Read, in *wire.GetApiKeysRequest) (any, error) {
	var users []*directory.User
	if in.UserId != "" {
		u, err := directory.LoadUser(q.Ctx, q.R, q.OrgID, in.UserId)
		if err != nil {
			return nil, err
		}
		users = []*directory.User{u}
	} else {
		var err error
		if users, err = directory.ListUsers(q.Ctx, q.R, q.OrgID); err != nil {
			return nil, err
		}
	}
	out := wire.GetApiKeysResponse{ApiKeys: []wire.ApiKey{}}
	for _, u := range users {
		ks, err := directory.UserAPIKeys(q.Ctx, q.R, u.ID)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			out.ApiKeys = append(out.ApiKeys, k.ToWire())
		}
	}
	return out, nil
}

func getAuthenticator(q *activity.Read, in *wire.GetAuthenticatorRequest) (any, error) {
	a, err := directory.LoadAuthenticator(q.Ctx, q.R, q.OrgID, in.AuthenticatorId)
	if err != nil {
		return nil, err
	}
	return wire.GetAuthenticatorResponse{Authenticator: a.ToWire()}, nil
}

func getAuthenticators(q *activity.Read, in *wire.GetAuthenticatorsRequest) (any, error) {
	if _, err := directory.LoadUser(q.Ctx, q.R, q.OrgID, in.UserId); err != nil {
		return nil, err
	}
	as, err := directory.UserAuthenticators(q.Ctx, q.R, in.UserId)
	if err != nil {
		return nil, err
	}
	out := wire.GetAuthenticatorsResponse{Authenticators: make([]wire.Authenticator, 0, len(as))}
	for _, a := range as {
		out.Authenticators = append(out.Authenticators, a.ToWire())
	}
	return out, nil
}

// ReadOnlySessionSeconds is how long a read-only session lasts.
const ReadOnlySessionSeconds = 3600

// createReadOnlySession issues a read-only session token for the caller: a session JWT signed by
// the notarizer key, sent back as the X-Session header on queries.
func createReadOnlySession(x *activity.Exec, _ any) (any, error) {
	c := x.Caller
	if c.ParentAccess {
		return nil, apierr.Denied("request not authorized: a read-only session is for a user of this organization")
	}
	exp := x.Now.Add(ReadOnlySessionSeconds * time.Second)
	tok, err := session.Encode(
		session.Claims{Exp: exp.Unix(), PublicKey: c.PublicKey, SessionType: session.ReadOnly, UserID: c.User.ID,
			OrganizationID: x.OrgID},
		func(d []byte) ([]byte, error) { return x.Services.ServerKeys.SignDigestRaw(custody.Notarizer, d) },
	)
	if err != nil {
		return nil, apierr.Internalf(err, "signing the session")
	}
	return wire.CreateReadOnlySessionResult{
		OrganizationId:   x.OrgID,
		OrganizationName: c.Target.Name,
		UserId:           c.User.ID,
		Username:         c.User.Name,
		Session:          tok,
		SessionExpiry:    strconv.FormatInt(exp.Unix(), 10),
	}, nil
}
