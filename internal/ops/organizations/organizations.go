package organizations

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Deps are what these operations need from the server configuration.
type Deps struct {
	Env func(x *activity.Exec) directory.Env
	// ExportGuard, when set, refuses deleting an organization that still holds keys never
	// exported (the wallets domain provides it).
	ExportGuard func(ctx context.Context, r store.Reader, orgID string) error
	// MintSubOrgWallet and SubOrgWallet, when set, create the wallet asked for in
	// create_sub_organization (the wallets domain provides them): the first makes it before the
	// transaction (the mnemonic, PBKDF2 and the derivation), the second stores what it made.
	MintSubOrgWallet func(x *activity.Exec, orgID string, w *wire.WalletParams) (any, error)
	SubOrgWallet     func(x *activity.Exec, minted any) (*wire.WalletResult, error)
	// OwnedKinds are other domains' record kinds an organization owns (deleted with it).
	OwnedKinds []string
	// SignupToken, when set, checks create_sub_organization's verificationToken and
	// clientSignature against the root users (the one-time-code domain provides it).
	SignupToken func(x *activity.Exec, token string, sig *wire.ClientSignature, users []directory.UserSpec) (directory.Contact, error)
}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	// Every version of the intent, for Prepare and Execute alike.
	subOrgIntents := []any{
		(*wire.CreateSubOrganizationIntentV8)(nil),
		(*wire.CreateSubOrganizationIntentV7)(nil),
		(*wire.CreateSubOrganizationIntentV6)(nil),
		(*wire.CreateSubOrganizationIntentV5)(nil),
		(*wire.CreateSubOrganizationIntentV4)(nil),
		(*wire.CreateSubOrganizationIntentV3)(nil),
		(*wire.CreateSubOrganizationIntentV2)(nil),
		(*wire.CreateSubOrganizationIntent)(nil),
	}
	reg.Submit(
		activity.Operation{
			Path:    "create_sub_organization",
			Access:  activity.AccessRoot,
			Prepare: activity.OnAny(d.prepareSubOrganization, subOrgIntents...),
			Execute: activity.OnAny(d.createSubOrganization, subOrgIntents...),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_sub_organization",
			Access:  activity.AccessRoot,
			Execute: activity.On(d.deleteSubOrganization),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "update_organization_name",
			Access:  activity.AccessRoot,
			Execute: activity.On(updateOrganizationName),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "update_root_quorum",
			Access:  activity.AccessRoot,
			Execute: activity.On(updateRootQuorum),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "set_organization_feature",
			Access:  activity.AccessRoot,
			Execute: activity.On(setFeature),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "remove_organization_feature",
			Access:  activity.AccessRoot,
			Execute: activity.On(removeFeature),
		},
	)

	reg.Query(activity.QueryOp{Path: "whoami", Execute: activity.Query(whoami)})
	reg.Query(activity.QueryOp{Path: "get_organization", Execute: activity.Query(getOrganization)})
	reg.Query(activity.QueryOp{Path: "get_organization_configs", Execute: activity.Query(getConfigs)})
	reg.Query(activity.QueryOp{Path: "list_suborgs", Execute: activity.Query(listSuborgs)})
	return OwnedKinds
}

func loadTarget(x *activity.Exec) (*directory.Organization, error) {
	// Read for update: the record is rewritten by most operations here.
	return directory.LoadOrganization(x.Ctx, x.Tx, x.OrgID)
}

func updateOrganizationName(x *activity.Exec, in *wire.UpdateOrganizationNameIntent) (any, error) {
	name, err := directory.CheckName("parameters.organizationName", in.OrganizationName)
	if err != nil {
		return nil, err
	}
	o, err := loadTarget(x)
	if err != nil {
		return nil, err
	}
	o.Name, o.UpdatedAt = name, x.Now
	if err := directory.SaveOrganization(x.Ctx, x.Tx, o); err != nil {
		return nil, err
	}
	return wire.UpdateOrganizationNameResult{OrganizationId: o.ID, OrganizationName: o.Name}, nil
}

// ValidateQuorum checks a root quorum against the organization's users.
func ValidateQuorum(x *activity.Exec, orgID string, userIDs []string, threshold int, field string) error {
	if len(userIDs) == 0 {
		return apierr.Invalid(field+".userIds", "quorum users missing")
	}
	if threshold < 1 {
		return apierr.Invalid(field+".threshold", "quorum threshold must be non-zero integer")
	}
	if threshold > len(userIDs) {
		return apierr.Invalid(
			field+".threshold",
			"quorum threshold %d is more than the %d quorum users",
			threshold,
			len(userIDs),
		)
	}
	seen := map[string]bool{}
	for i, u := range userIDs {
		if seen[u] {
			return apierr.Invalid(field+".userIds["+strconv.Itoa(i)+"]", "user %s is listed twice", u)
		}
		seen[u] = true
		if _, err := directory.LoadUser(x.Ctx, x.Tx, orgID, u); err != nil {
			return apierr.Invalid(field+".userIds["+strconv.Itoa(i)+"]", "no user %s in this organization", u)
		}
	}
	return nil
}

func updateRootQuorum(x *activity.Exec, in *wire.UpdateRootQuorumIntent) (any, error) {
	if err := CheckCount("parameters.userIds", len(in.UserIds), MaxUsersPerRequest, "quorum users"); err != nil {
		return nil, err
	}
	// The quorum's members must exist when it commits: serialise with delete_users, which
	// refuses to delete a member (see LockRootQuorum).
	if err := LockRootQuorum(x); err != nil {
		return nil, err
	}
	if err := ValidateQuorum(x, x.OrgID, in.UserIds, int(in.Threshold), "parameters"); err != nil {
		return nil, err
	}
	o, err := loadTarget(x)
	if err != nil {
		return nil, err
	}
	o.RootQuorum = directory.Quorum{UserIDs: append([]string{}, in.UserIds...), Threshold: int(in.Threshold)}
	o.UpdatedAt = x.Now
	if err := directory.SaveOrganization(x.Ctx, x.Tx, o); err != nil {
		return nil, err
	}
	return wire.UpdateRootQuorumResult{}, nil
}

func setFeature(x *activity.Exec, in *wire.SetOrganizationFeatureIntent) (any, error) {
	o, err := loadTarget(x)
	if err != nil {
		return nil, err
	}
	f := directory.Feature{Name: string(in.Name), Value: in.Value}
	i := slices.IndexFunc(o.Features, func(g directory.Feature) bool { return g.Name == f.Name })
	if i >= 0 {
		o.Features[i] = f
	} else {
		o.Features = append(o.Features, f)
	}
	o.UpdatedAt = x.Now
	if err := directory.SaveOrganization(x.Ctx, x.Tx, o); err != nil {
		return nil, err
	}
	return wire.SetOrganizationFeatureResult{Features: o.FeaturesToWire()}, nil
}

func removeFeature(x *activity.Exec, in *wire.RemoveOrganizationFeatureIntent) (any, error) {
	o, err := loadTarget(x)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(o.Features, func(g directory.Feature) bool { return g.Name == string(in.Name) })
	if i < 0 {
		return nil, apierr.NotFoundf("feature %s is not set on this organization", in.Name)
	}
	o.Features = slices.Delete(o.Features, i, i+1)
	o.UpdatedAt = x.Now
	if err := directory.SaveOrganization(x.Ctx, x.Tx, o); err != nil {
		return nil, err
	}
	return wire.RemoveOrganizationFeatureResult{Features: o.FeaturesToWire()}, nil
}

func (d Deps) deleteSubOrganization(x *activity.Exec, in *wire.DeleteSubOrganizationIntent) (any, error) {
	o, err := loadTarget(x)
	if err != nil {
		return nil, err
	}
	if o.ParentID == "" {
		return nil, apierr.New(
			apierr.InvalidArgument,
			"INVALID_ACTIVITY_CALLER",
			"delete_sub_organization must target a sub-organization; %s is a top-level organization",
			o.ID,
		)
	}
	if (in.DeleteWithoutExport == nil || !*in.DeleteWithoutExport) && d.ExportGuard != nil {
		if err := d.ExportGuard(x.Ctx, x.Tx, o.ID); err != nil {
			return nil, err
		}
	}
	if err := DeleteOrganizationRecords(x.Ctx, x.Tx, o.ID, d.OwnedKinds...); err != nil {
		return nil, err
	}
	if err := directory.Delete(x.Ctx, x.Tx, directory.KindOrganization, o.ID); err != nil {
		return nil, err
	}
	return wire.DeleteSubOrganizationResult{SubOrganizationUuid: o.ID}, nil
}

// OwnedKinds are the record kinds of the organization model an organization owns and that go
// with it; Deps.OwnedKinds adds other domains'.
var OwnedKinds = []string{
	directory.KindUserTag,
	directory.KindAPIKey,
	directory.KindAuthenticator,
	directory.KindOAuthProvider,
	directory.KindUser,
}

// DeleteOrganizationRecords removes every record the organization owns (not the organization
// record itself, nor its activities, which stay as the audit trail).
func DeleteOrganizationRecords(ctx context.Context, tx store.Tx, orgID string, more ...string) error {
	for _, kind := range append(append([]string{}, more...), OwnedKinds...) {
		recs, err := tx.List(ctx, kind, orgID, store.ListOptions{})
		if err != nil {
			return apierr.Internalf(err, "listing %s", kind)
		}
		for _, r := range recs {
			if err := tx.Delete(ctx, kind, r.ID); err != nil {
				return apierr.Internalf(err, "deleting %s", kind)
			}
		}
	}
	return nil
}

func whoami(q *activity.Read, _ *wire.GetWhoamiRequest) (any, error) {
	c := q.Caller
	return wire.GetWhoamiResponse{
		OrganizationId:   c.Org.ID,
		OrganizationName: c.Org.Name,
		UserId:           c.User.ID,
		Username:         c.User.Name,
	}, nil
}

func getConfigs(q *activity.Read, _ *wire.GetOrganizationConfigsRequest) (any, error) {
	o := q.Caller.Target
	return wire.GetOrganizationConfigsResponse{
		Configs: wire.Config{Features: o.FeaturesToWire(), Quorum: o.QuorumToWire()},
	}, nil
}

func getOrganization(q *activity.Read, _ *wire.GetOrganizationRequest) (any, error) {
	o := q.Caller.Target
	users, err := directory.ListUsers(q.Ctx, q.R, o.ID)
	if err != nil {
		return nil, err
	}
	data := wire.OrganizationData{
		OrganizationId: o.ID,
		Name:           o.Name,
		RootQuorum:     o.QuorumToWire(),
		Features:       o.FeaturesToWire(),
		Users:          []wire.User{},
		Tags:           []wire.Datav1Tag{},
	}
	for _, u := range users {
		w, err := directory.UserToWire(q.Ctx, q.R, u)
		if err != nil {
			return nil, err
		}
		data.Users = append(data.Users, w)
	}
	tags, err := directory.ListUserTags(q.Ctx, q.R, o.ID)
	if err != nil {
		return nil, err
	}
	for _, t := range tags {
		data.Tags = append(data.Tags, t.ToWire())
	}
	return wire.GetOrganizationResponse{OrganizationData: data}, nil
}

// ListOptions converts swagger pagination (limit 1..100, default 10) to store options.
func ListOptions(p *wire.Pagination, field string, desc bool) (store.ListOptions, error) {
	opts := store.ListOptions{Limit: 10, Desc: desc}
	if p == nil {
		return opts, nil
	}
	if p.Limit != "" {
		n, err := strconv.Atoi(p.Limit)
		if err != nil || n < 1 || n > 100 {
			return opts, apierr.Invalid(field+".limit", "must be between 1 and 100, got %q", p.Limit)
		}
		opts.Limit = n
	}
	if p.Before != "" && p.After != "" {
		return opts, apierr.Invalid(field, "give before or after, not both")
	}
	opts.Before, opts.After = p.Before, p.After
	return opts, nil
}

// Filter types of list_suborgs and the lookup keys that answer them.
var suborgFilterKeys = map[string]string{
	"EMAIL":                  directory.KeyUserEmail,
	"PHONE_NUMBER":           directory.KeyUserPhone,
	"PUBLIC_KEY":             directory.KeyAPIKeyPublicKey,
	"CREDENTIAL_ID":          directory.KeyAuthCredentialID,
	"WALLET_ACCOUNT_ADDRESS": "wallet_account.address",
	oidcSubject:              directory.KeyOAuthSubject,
}

// oidcSubject filters by a verified OIDC identity (issuer NUL subject NUL audience); list_suborgs
// turns an OIDC_TOKEN into it once the token verifies.
const oidcSubject = "oidc subject"

func listSuborgs(q *activity.Read, in *wire.GetSubOrgIdsRequest) (any, error) {
	parent := q.Caller.Target
	if in.FilterType == "" {
		opts, err := ListOptions(in.PaginationOptions, "paginationOptions", false)
		if err != nil {
			return nil, err
		}
		opts.MaxBytes = records.MaxPageBytes
		orgs, err := directory.ListSubOrganizations(q.Ctx, q.R, parent.ID, opts)
		if err != nil {
			return nil, err
		}
		ids := make([]string, 0, len(orgs))
		for _, o := range orgs {
			ids = append(ids, o.ID)
		}
		return wire.GetSubOrgIdsResponse{OrganizationIds: ids}, nil
	}
	if in.FilterValue == "" {
		return nil, apierr.Required("filterValue")
	}
	if in.FilterType == "USERNAME" {
		// User names are not unique: a name may be held in many sub-organizations, so this
		// filter pages like the unfiltered list.
		opts, err := ListOptions(in.PaginationOptions, "paginationOptions", false)
		if err != nil {
			return nil, err
		}
		ids, err := subOrgsWithUser(q.Ctx, q.R, parent.ID, in.FilterValue, opts)
		if err != nil {
			return nil, err
		}
		return wire.GetSubOrgIdsResponse{OrganizationIds: ids}, nil
	}
	filter, value := in.FilterType, in.FilterValue
	if filter == "OIDC_TOKEN" {
		if q.Services.VerifyOIDC == nil {
			return nil, apierr.Unsupported("list_suborgs filterType OIDC_TOKEN (no OIDC verifier is configured)")
		}
		id, err := q.Services.VerifyOIDC(q.Ctx, value, "")
		if err != nil {
			return nil, apierr.Invalid("filterValue", "%v", err)
		}
		filter, value = oidcSubject, id.Issuer+"\x00"+id.Subject+"\x00"+id.Audience
	}
	ids, err := SubOrgsMatching(q.Ctx, q.R, parent.ID, filter, value)
	if err != nil {
		return nil, err
	}
	return wire.GetSubOrgIdsResponse{OrganizationIds: ids}, nil
}

// subOrgsWithUser returns a page (opts) of the ids of parentID's sub-organizations that hold a
// user named name, oldest first: one query over the parent's sub-organizations that own a
// record carrying the name's key (directory.KeyUserNameAny), within records.MaxPageBytes, so
// its cost is the page's, not one look-up per sub-organization.
func subOrgsWithUser(
	ctx context.Context,
	r store.Reader,
	parentID, name string,
	opts store.ListOptions,
) ([]string, error) {
	opts.MaxBytes = records.MaxPageBytes
	opts.OwnerOf = store.Key{Name: directory.KeyUserNameAny, Value: name}
	orgs, err := directory.ListSubOrganizations(ctx, r, parentID, opts)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(orgs))
	for _, o := range orgs {
		ids = append(ids, o.ID)
	}
	return ids, nil
}

// SubOrgsMatching returns the ids of parentID's sub-organizations that hold a user, credential or
// account matching the filter (list_suborgs filter types), in creation order.
func SubOrgsMatching(ctx context.Context, r store.Reader, parentID, filterType, value string) ([]string, error) {
	var refs []store.Ref
	var err error
	switch filterType {
	case "NAME":
		refs, err = r.Lookup(ctx, directory.KeyOrgName, strings.ToLower(value))
		// The organization record is owned by its parent: the ref's ID is the sub-org.
		out := []string{}
		for _, ref := range refs {
			if ref.Kind == directory.KindOrganization && ref.OrgID == parentID {
				out = append(out, ref.ID)
			}
		}
		return out, wrapLookup(err)
	case "USERNAME":
		out := []string{}
		for opts := (store.ListOptions{Limit: 100}); ; {
			page, err := subOrgsWithUser(ctx, r, parentID, value, opts)
			if err != nil || len(page) == 0 {
				return out, err
			}
			out = append(out, page...)
			opts.After = page[len(page)-1]
		}
	case "EMAIL":
		value = strings.ToLower(value)
	case "PUBLIC_KEY":
		value = strings.ToLower(strings.TrimPrefix(value, "0x"))
	case "WALLET_ACCOUNT_ADDRESS":
		value = address.Normalize(value) // checksummed or not, as clients send it
	}
	key, ok := suborgFilterKeys[filterType]
	if !ok {
		return nil, apierr.Invalid(
			"filterType",
			"unknown filter type %q (expected NAME, USERNAME, EMAIL, PHONE_NUMBER, PUBLIC_KEY, CREDENTIAL_ID, OIDC_TOKEN or WALLET_ACCOUNT_ADDRESS)",
			filterType,
		)
	}
	if refs, err = r.Lookup(ctx, key, value); err != nil {
		return nil, wrapLookup(err)
	}
	seen := map[string]bool{}
	type hit struct {
		id string
		o  *directory.Organization
	}
	var hits []hit
	for _, ref := range refs {
		if seen[ref.OrgID] {
			continue
		}
		seen[ref.OrgID] = true
		o, err := directory.LoadOrganization(ctx, r, ref.OrgID)
		if err != nil {
			continue
		}
		if o.ParentID == parentID {
			hits = append(hits, hit{o.ID, o})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if c := a.o.CreatedAt.Compare(b.o.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]string, 0, len(hits))
	for _, h := range hits {
		out = append(out, h.id)
	}
	return out, nil
}

func wrapLookup(err error) error {
	if err != nil {
		return apierr.Internalf(err, "lookup")
	}
	return nil
}

// NewOrganization builds a top-level or sub-organization record.
func NewOrganization(name, parentID string, x *activity.Exec) *directory.Organization {
	return &directory.Organization{
		ID:        id.New(),
		Name:      name,
		ParentID:  parentID,
		Features:  []directory.Feature{},
		CreatedAt: x.Now,
		UpdatedAt: x.Now,
	}
}

// LockRootQuorum serialises the activities that change the root quorum or delete users in x's
// organization until commit, so a user joining the quorum and the same user being deleted
// cannot both succeed and leave a quorum it cannot reach.
func LockRootQuorum(x *activity.Exec) error {
	return x.Tx.Lock(x.Ctx, "root_quorum\x00"+x.OrgID)
}
