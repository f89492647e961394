package users

import (
	"strconv"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/wire"
)

// Deps are what these operations need from the server configuration.
type Deps struct {
	Env func(x *activity.Exec) directory.Env
	// ProveContact checks a verification token for exactly the contact (otp.ProveContact)
	// and uses it up; nil refuses verification tokens as not supported.
	ProveContact func(x *activity.Exec, field, token, otpType, contact string) error
}

// OTP verification types (the verification_type of a verification token).
const (
	otpEmail = "OTP_TYPE_EMAIL"
	otpSMS   = "OTP_TYPE_SMS"
)

// vouched reports whether the caller vouches for the contacts it writes in x's organization
// (directory.VouchedContacts); contacts it does not vouch for are stored unproven.
func vouched(x *activity.Exec) (bool, error) {
	o, err := directory.LoadOrganization(x.Ctx, x.Tx, x.OrgID)
	if err != nil {
		return false, err
	}
	return directory.VouchedContacts(x.Caller, o), nil
}

// markSpecs marks the contacts of users to create as unproven unless the caller vouches.
func markSpecs(x *activity.Exec, specs []directory.UserSpec) error {
	ok, err := vouched(x)
	if err != nil || ok {
		return err
	}
	for i := range specs {
		specs[i].EmailUnproven, specs[i].PhoneUnproven = true, true
	}
	return nil
}

// proveContact decides whether a contact update stores a proven contact: with a verification
// token for exactly that contact, or when the caller vouches for it.
func (d Deps) proveContact(x *activity.Exec, token, otpType, contact string) (bool, error) {
	if token == "" {
		return vouched(x)
	}
	if d.ProveContact == nil {
		return false, apierr.Unsupported("verificationToken (one-time codes are not served)")
	}
	if contact == "" {
		return false, apierr.Invalid(
			"parameters.verificationToken",
			"a verification token proves a contact: there is none to prove",
		)
	}
	if err := d.ProveContact(x, "parameters.verificationToken", token, otpType, contact); err != nil {
		return false, err
	}
	return true, nil
}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{
			Path:   "create_users",
			Access: activity.AccessRoot,
			Execute: activity.OnAny(
				d.createUsers,
				(*wire.CreateUsersIntentV4)(nil),
				(*wire.CreateUsersIntentV3)(nil),
				(*wire.CreateUsersIntentV2)(nil),
				(*wire.CreateUsersIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "create_api_only_users",
			Access:  activity.AccessRoot,
			Execute: activity.On(d.createAPIOnlyUsers),
		},
	)
	reg.Submit(activity.Operation{Path: "update_user", Access: activity.AccessRoot, Execute: activity.On(updateUser)})
	reg.Submit(
		activity.Operation{Path: "update_user_name", Access: activity.AccessSelf, Execute: activity.On(updateUserName),
			SelfUser: activity.User(func(_ *activity.Exec, in *wire.UpdateUserNameIntent) string { return in.UserId })},
	)
	reg.Submit(
		activity.Operation{
			Path:    "update_user_email",
			Access:  activity.AccessSelf,
			Execute: activity.On(d.updateUserEmail),
			SelfUser: activity.User(
				func(_ *activity.Exec, in *wire.UpdateUserEmailIntent) string { return in.UserId },
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "update_user_phone_number",
			Access:  activity.AccessSelf,
			Execute: activity.On(d.updateUserPhone),
			SelfUser: activity.User(
				func(_ *activity.Exec, in *wire.UpdateUserPhoneNumberIntent) string { return in.UserId },
			),
		},
	)
	reg.Submit(activity.Operation{Path: "delete_users", Access: activity.AccessRoot, Execute: activity.On(deleteUsers)})
	reg.Submit(
		activity.Operation{Path: "create_user_tag", Access: activity.AccessRoot, Execute: activity.On(d.createUserTag)},
	)
	reg.Submit(
		activity.Operation{Path: "update_user_tag", Access: activity.AccessRoot, Execute: activity.On(updateUserTag)},
	)
	reg.Submit(
		activity.Operation{Path: "delete_user_tags", Access: activity.AccessRoot, Execute: activity.On(deleteUserTags)},
	)

	reg.Query(activity.QueryOp{Path: "get_user", Execute: activity.Query(getUser)})
	reg.Query(activity.QueryOp{Path: "list_users", Execute: activity.Query(listUsers)})
	reg.Query(activity.QueryOp{Path: "list_user_tags", Execute: activity.Query(listUserTags)})
	return nil
}

// The per-request limits these operations check (docs/limits.md §8.2).
const (
	maxIDs  = organizations.MaxIDsPerRequest
	maxTags = organizations.MaxTagsPerRequest
)

func field(prefix string, i int) string { return prefix + "[" + strconv.Itoa(i) + "]" }

func (d Deps) createUsers(x *activity.Exec, intent any) (any, error) {
	var specs []directory.UserSpec
	const f = "parameters.users"
	switch in := intent.(type) {
	case *wire.CreateUsersIntentV4:
		for i, u := range in.Users {
			s := directory.UserSpec{Name: u.UserName, Email: u.UserEmail, PhoneNumber: u.UserPhoneNumber, TagIDs: u.UserTags, Field: field(f, i)}
			s.APIKeys = directory.APIKeysV2(s.Field+".apiKeys", u.ApiKeys)
			s.Authenticators = directory.AuthenticatorsV2(s.Field+".authenticators", u.Authenticators)
			s.OAuthProviders = directory.OAuthV2(s.Field+".oauthProviders", u.OauthProviders)
			specs = append(specs, s)
		}
	case *wire.CreateUsersIntentV3:
		for i, u := range in.Users {
			s := directory.UserSpec{Name: u.UserName, Email: u.UserEmail, PhoneNumber: u.UserPhoneNumber, TagIDs: u.UserTags, Field: field(f, i)}
			s.APIKeys = directory.APIKeysV2(s.Field+".apiKeys", u.ApiKeys)
			s.Authenticators = directory.AuthenticatorsV2(s.Field+".authenticators", u.Authenticators)
			s.OAuthProviders = directory.OAuthV1(s.Field+".oauthProviders", u.OauthProviders)
			specs = append(specs, s)
		}
	case *wire.CreateUsersIntentV2:
		for i, u := range in.Users {
			s := directory.UserSpec{Name: u.UserName, Email: u.UserEmail, TagIDs: u.UserTags, Field: field(f, i)}
			s.APIKeys = directory.APIKeysV1(s.Field+".apiKeys", u.ApiKeys)
			s.Authenticators = directory.AuthenticatorsV2(s.Field+".authenticators", u.Authenticators)
			specs = append(specs, s)
		}
	case *wire.CreateUsersIntent:
		for i, u := range in.Users {
			s := directory.UserSpec{Name: u.UserName, Email: u.UserEmail, TagIDs: u.UserTags, Field: field(f, i)}
			s.APIKeys = directory.APIKeysV1(s.Field+".apiKeys", u.ApiKeys)
			s.Authenticators = directory.AuthenticatorsV1(s.Field+".authenticators", u.Authenticators)
			specs = append(specs, s)
		}
	default:
		return nil, apierr.Internalf(nil, "create_users: unexpected intent %T", intent)
	}
	if len(specs) == 0 {
		return nil, apierr.Invalid(f, "at least one user is required")
	}
	if err := organizations.CheckUserSpecs(f, specs); err != nil {
		return nil, err
	}
	if err := markSpecs(x, specs); err != nil {
		return nil, err
	}
	env := d.Env(x)
	ids := make([]string, 0, len(specs))
	for _, s := range specs {
		u, err := directory.CreateUser(x.Ctx, x.Tx, env, x.OrgID, s)
		if err != nil {
			return nil, err
		}
		ids = append(ids, u.ID)
	}
	return wire.CreateUsersResult{UserIds: ids}, nil
}

// createAPIOnlyUsers is the older form of create_users for users that authenticate only with
// API keys: no authenticators, no phone number.
func (d Deps) createAPIOnlyUsers(x *activity.Exec, in *wire.CreateApiOnlyUsersIntent) (any, error) {
	const f = "parameters.apiOnlyUsers"
	if len(in.ApiOnlyUsers) == 0 {
		return nil, apierr.Invalid(f, "at least one user is required")
	}
	if err := organizations.CheckCount(f, len(in.ApiOnlyUsers), organizations.MaxUsersPerRequest, "users"); err != nil {
		return nil, err
	}
	specs := make([]directory.UserSpec, 0, len(in.ApiOnlyUsers))
	for i, u := range in.ApiOnlyUsers {
		s := directory.UserSpec{Name: u.UserName, Email: u.UserEmail, TagIDs: u.UserTags, Field: field(f, i)}
		s.APIKeys = directory.APIKeysV1(s.Field+".apiKeys", u.ApiKeys)
		specs = append(specs, s)
	}
	if err := organizations.CheckUserSpecs(f, specs); err != nil {
		return nil, err
	}
	env := d.Env(x)
	ok, err := vouched(x)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(specs))
	for _, s := range specs {
		s.EmailUnproven = !ok
		created, err := directory.CreateUser(x.Ctx, x.Tx, env, x.OrgID, s)
		if err != nil {
			return nil, err
		}
		ids = append(ids, created.ID)
	}
	return wire.CreateApiOnlyUsersResult{UserIds: ids}, nil
}

func loadUser(x *activity.Exec, userID string) (*directory.User, error) {
	u, err := directory.LoadUser(x.Ctx, x.Tx, x.OrgID, userID)
	if err != nil {
		return nil, apierr.Invalid("parameters.userId", "no user %s in this organization", userID)
	}
	return u, nil
}

func saveUser(x *activity.Exec, u *directory.User) error {
	u.UpdatedAt = x.Now
	return directory.SaveUser(x.Ctx, x.Tx, u)
}

func setName(u *directory.User, name string) error {
	name, err := directory.CheckName("parameters.userName", name)
	if err != nil {
		return err
	}
	u.Name = name
	return nil
}

func setEmail(u *directory.User, email string, proven bool) error {
	if email != "" {
		if err := directory.CheckEmail("parameters.userEmail", email); err != nil {
			return err
		}
	}
	u.Email, u.EmailUnproven = email, email != "" && !proven
	return nil
}

func setPhone(u *directory.User, phone string, proven bool) error {
	if phone != "" && !directory.ValidE164(phone) {
		return apierr.Invalid("parameters.userPhoneNumber", "must be in E.164 format (e.g. +13214567890)")
	}
	u.PhoneNumber, u.PhoneUnproven = phone, phone != "" && !proven
	return nil
}

func updateUser(x *activity.Exec, in *wire.UpdateUserIntent) (any, error) {
	const tags = "parameters.userTagIds"
	if err := organizations.CheckCount(tags, len(in.UserTagIds), maxTags, "user tags"); err != nil {
		return nil, err
	}
	u, err := loadUser(x, in.UserId)
	if err != nil {
		return nil, err
	}
	if in.UserName != "" {
		if err := setName(u, in.UserName); err != nil {
			return nil, err
		}
	}
	ok, err := vouched(x)
	if err != nil {
		return nil, err
	}
	if in.UserEmail != "" {
		if err := setEmail(u, in.UserEmail, ok); err != nil {
			return nil, err
		}
	}
	if in.UserPhoneNumber != "" {
		if err := setPhone(u, in.UserPhoneNumber, ok); err != nil {
			return nil, err
		}
	}
	if in.UserTagIds != nil {
		if err := setUserTags(x, u.ID, in.UserTagIds); err != nil {
			return nil, err
		}
	}
	if err := saveUser(x, u); err != nil {
		return nil, err
	}
	return wire.UpdateUserResult{UserId: u.ID}, nil
}

// setUserTags makes tagIDs exactly the tags userID carries.
func setUserTags(x *activity.Exec, userID string, tagIDs []string) error {
	want := map[string]bool{}
	for i, t := range tagIDs {
		if _, err := directory.LoadUserTag(x.Ctx, x.Tx, x.OrgID, t); err != nil {
			return apierr.Invalid(field("parameters.userTagIds", i), "no user tag %s in this organization", t)
		}
		want[t] = true
	}
	have, err := directory.UserTagIDs(x.Ctx, x.Tx, userID)
	if err != nil {
		return err
	}
	for _, t := range have {
		if !want[t] {
			if err := changeMembers(x, t, nil, []string{userID}); err != nil {
				return err
			}
		}
		delete(want, t)
	}
	for _, t := range tagIDs {
		if want[t] {
			if err := changeMembers(x, t, []string{userID}, nil); err != nil {
				return err
			}
			delete(want, t)
		}
	}
	return nil
}

func changeMembers(x *activity.Exec, tagID string, add, remove []string) error {
	t, err := directory.LoadUserTag(x.Ctx, x.Tx, x.OrgID, tagID)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	for _, u := range t.UserIDs {
		set[u] = true
	}
	for _, u := range remove {
		delete(set, u)
	}
	members := t.UserIDs[:0:0]
	for _, u := range t.UserIDs {
		if set[u] {
			members = append(members, u)
			delete(set, u)
		}
	}
	for _, u := range add {
		if !containsStr(members, u) {
			members = append(members, u)
		}
	}
	t.UserIDs, t.UpdatedAt = members, x.Now
	return directory.SaveUserTag(x.Ctx, x.Tx, t)
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func updateUserName(x *activity.Exec, in *wire.UpdateUserNameIntent) (any, error) {
	u, err := loadUser(x, in.UserId)
	if err != nil {
		return nil, err
	}
	if err := setName(u, in.UserName); err != nil {
		return nil, err
	}
	if err := saveUser(x, u); err != nil {
		return nil, err
	}
	return wire.UpdateUserNameResult{UserId: u.ID}, nil
}

func (d Deps) updateUserEmail(x *activity.Exec, in *wire.UpdateUserEmailIntent) (any, error) {
	u, err := loadUser(x, in.UserId)
	if err != nil {
		return nil, err
	}
	proven, err := d.proveContact(x, in.VerificationToken, otpEmail, in.UserEmail)
	if err != nil {
		return nil, err
	}
	if err := setEmail(u, in.UserEmail, proven); err != nil {
		return nil, err
	}
	if err := saveUser(x, u); err != nil {
		return nil, err
	}
	return wire.UpdateUserEmailResult{UserId: u.ID}, nil
}

func (d Deps) updateUserPhone(x *activity.Exec, in *wire.UpdateUserPhoneNumberIntent) (any, error) {
	u, err := loadUser(x, in.UserId)
	if err != nil {
		return nil, err
	}
	proven, err := d.proveContact(x, in.VerificationToken, otpSMS, in.UserPhoneNumber)
	if err != nil {
		return nil, err
	}
	if err := setPhone(u, in.UserPhoneNumber, proven); err != nil {
		return nil, err
	}
	if err := saveUser(x, u); err != nil {
		return nil, err
	}
	return wire.UpdateUserPhoneNumberResult{UserId: u.ID}, nil
}

func deleteUsers(x *activity.Exec, in *wire.DeleteUsersIntent) (any, error) {
	if len(in.UserIds) == 0 {
		return nil, apierr.Invalid("parameters.userIds", "at least one user id is required")
	}
	if err := organizations.CheckIDs("parameters.userIds", in.UserIds, maxIDs, "user ids"); err != nil {
		return nil, err
	}
	if err := organizations.LockRootQuorum(x); err != nil {
		return nil, err
	}
	o, err := directory.LoadOrganization(x.Ctx, x.Tx, x.OrgID)
	if err != nil {
		return nil, err
	}
	for i, uid := range in.UserIds {
		if o.IsRoot(uid) {
			return nil, apierr.New(
				apierr.FailedPrecondition,
				"INVALID_REQUEST",
				"%s: user %s is in the root quorum; remove them with update_root_quorum first",
				field("parameters.userIds", i),
				uid,
			)
		}
		u, err := directory.LoadUser(x.Ctx, x.Tx, x.OrgID, uid)
		if err != nil {
			return nil, apierr.Invalid(field("parameters.userIds", i), "no user %s in this organization", uid)
		}
		if err := directory.DeleteUser(x.Ctx, x.Tx, x.Now, u); err != nil {
			return nil, err
		}
	}
	return wire.DeleteUsersResult{UserIds: in.UserIds}, nil
}

func checkUsers(x *activity.Exec, f string, ids []string) error {
	if err := organizations.CheckCount(f, len(ids), maxIDs, "user ids"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, uid := range ids {
		if seen[uid] {
			return apierr.Invalid(field(f, i), "user %s is listed twice", uid)
		}
		seen[uid] = true
		if _, err := directory.LoadUser(x.Ctx, x.Tx, x.OrgID, uid); err != nil {
			return apierr.Invalid(field(f, i), "no user %s in this organization", uid)
		}
	}
	return nil
}

func (d Deps) createUserTag(x *activity.Exec, in *wire.CreateUserTagIntent) (any, error) {
	name, err := directory.CheckName("parameters.userTagName", in.UserTagName)
	if err != nil {
		return nil, err
	}
	if err := checkUsers(x, "parameters.userIds", in.UserIds); err != nil {
		return nil, err
	}
	lim := d.Env(x).Limits
	if err := lim.Check(x.Ctx, x.Tx, directory.KindUserTag, x.OrgID, lim.UserTagsPerOrg, "user tags"); err != nil {
		return nil, err
	}
	t := &directory.UserTag{
		ID:        id.New(),
		OrgID:     x.OrgID,
		Name:      name,
		UserIDs:   append([]string{}, in.UserIds...),
		CreatedAt: x.Now,
		UpdatedAt: x.Now,
	}
	if err := directory.SaveUserTag(x.Ctx, x.Tx, t); err != nil {
		return nil, err
	}
	return wire.CreateUserTagResult{UserTagId: t.ID, UserIds: t.UserIDs}, nil
}

func updateUserTag(x *activity.Exec, in *wire.UpdateUserTagIntent) (any, error) {
	for _, l := range []struct {
		field string
		ids   []string
	}{{"parameters.addUserIds", in.AddUserIds}, {"parameters.removeUserIds", in.RemoveUserIds}} {
		if err := organizations.CheckCount(l.field, len(l.ids), maxIDs, "user ids"); err != nil {
			return nil, err
		}
	}
	t, err := directory.LoadUserTag(x.Ctx, x.Tx, x.OrgID, in.UserTagId)
	if err != nil {
		return nil, apierr.Invalid("parameters.userTagId", "no user tag %s in this organization", in.UserTagId)
	}
	if in.NewUserTagName != "" {
		if t.Name, err = directory.CheckName("parameters.newUserTagName", in.NewUserTagName); err != nil {
			return nil, err
		}
		t.UpdatedAt = x.Now
		if err := directory.SaveUserTag(x.Ctx, x.Tx, t); err != nil {
			return nil, err
		}
	}
	if err := checkUsers(x, "parameters.addUserIds", in.AddUserIds); err != nil {
		return nil, err
	}
	if err := changeMembers(x, t.ID, in.AddUserIds, in.RemoveUserIds); err != nil {
		return nil, err
	}
	return wire.UpdateUserTagResult{UserTagId: t.ID}, nil
}

func deleteUserTags(x *activity.Exec, in *wire.DeleteUserTagsIntent) (any, error) {
	if len(in.UserTagIds) == 0 {
		return nil, apierr.Invalid("parameters.userTagIds", "at least one user tag id is required")
	}
	const f = "parameters.userTagIds"
	if err := organizations.CheckIDs(f, in.UserTagIds, maxIDs, "user tag ids"); err != nil {
		return nil, err
	}
	users := []string{}
	seen := map[string]bool{}
	for i, tid := range in.UserTagIds {
		t, err := directory.LoadUserTag(x.Ctx, x.Tx, x.OrgID, tid)
		if err != nil {
			return nil, apierr.Invalid(field("parameters.userTagIds", i), "no user tag %s in this organization", tid)
		}
		for _, u := range t.UserIDs {
			if !seen[u] {
				seen[u] = true
				users = append(users, u)
			}
		}
		if err := directory.Delete(x.Ctx, x.Tx, directory.KindUserTag, t.ID); err != nil {
			return nil, err
		}
	}
	return wire.DeleteUserTagsResult{UserTagIds: in.UserTagIds, UserIds: users}, nil
}

func getUser(q *activity.Read, in *wire.GetUserRequest) (any, error) {
	u, err := directory.LoadUser(q.Ctx, q.R, q.OrgID, in.UserId)
	if err != nil {
		return nil, err
	}
	w, err := directory.UserToWire(q.Ctx, q.R, u)
	if err != nil {
		return nil, err
	}
	return wire.GetUserResponse{User: w}, nil
}

func listUsers(q *activity.Read, _ *wire.GetUsersRequest) (any, error) {
	us, err := directory.ListUsers(q.Ctx, q.R, q.OrgID)
	if err != nil {
		return nil, err
	}
	out := wire.GetUsersResponse{Users: make([]wire.User, 0, len(us))}
	for _, u := range us {
		w, err := directory.UserToWire(q.Ctx, q.R, u)
		if err != nil {
			return nil, err
		}
		out.Users = append(out.Users, w)
	}
	return out, nil
}

func listUserTags(q *activity.Read, _ *wire.ListUserTagsRequest) (any, error) {
	ts, err := directory.ListUserTags(q.Ctx, q.R, q.OrgID)
	if err != nil {
		return nil, err
	}
	out := wire.ListUserTagsResponse{UserTags: make([]wire.Datav1Tag, 0, len(ts))}
	for _, t := range ts {
		out.UserTags = append(out.UserTags, t.ToWire())
	}
	return out, nil
}
