package profiles

import (
	"context"
	"strconv"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Record kinds and keys.
const (
	KindSessionProfile = "session_profile"
	KindInvitation     = "invitation"
	keyProfileName     = "session_profile.name" // unique: org/name
)

// MaxProfiles bounds an organization's session profiles.
const MaxProfiles = 100

// Profile is a stored session profile.
type Profile struct {
	ID                string    `json:"id"`
	OrgID             string    `json:"orgId"`
	Name              string    `json:"name"`
	Scope             string    `json:"scope"`
	ExpirationSeconds string    `json:"expirationSeconds,omitempty"`
	Notes             string    `json:"notes,omitempty"`
	CreatedAt         time.Time `json:"createdAt"`
	UpdatedAt         time.Time `json:"updatedAt"`
}

func (p *Profile) toWire() wire.SessionProfile {
	return wire.SessionProfile{
		SessionProfileId:   p.ID,
		SessionProfileName: p.Name,
		Scope:              p.Scope,
		ExpirationSeconds:  p.ExpirationSeconds,
		Notes:              p.Notes,
		CreatedAt:          directory.Timestamp(p.CreatedAt),
		UpdatedAt:          directory.Timestamp(p.UpdatedAt),
	}
}

// Invitation is a stored invitation.
type Invitation struct {
	ID           string    `json:"id"`
	OrgID        string    `json:"orgId"`
	UserName     string    `json:"userName"`
	Email        string    `json:"email"`
	TagIDs       []string  `json:"tagIds"`
	AccessType   string    `json:"accessType"`
	SenderUserID string    `json:"senderUserId"`
	Status       string    `json:"status"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// Deps are the dependencies of the operations (none yet: they take what they need from the
// Exec).
type Deps struct{}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	reg.Submit(
		activity.Operation{
			Path:    "create_session_profile",
			Access:  activity.AccessRoot,
			Execute: activity.On(createProfile),
		},
	)
	reg.Query(activity.QueryOp{Path: "get_session_profile", Execute: activity.Query(getProfile)})
	reg.Query(activity.QueryOp{Path: "get_session_profiles", Execute: activity.Query(listProfiles)})
	reg.Submit(
		activity.Operation{
			Path:    "create_invitations",
			Access:  activity.AccessRoot,
			Execute: activity.On(createInvitations),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:    "delete_invitation",
			Access:  activity.AccessRoot,
			Execute: activity.On(deleteInvitation),
		},
	)
	return []string{KindSessionProfile, KindInvitation}
}

func createProfile(x *activity.Exec, in *wire.CreateSessionProfileIntent) (any, error) {
	name, err := directory.CheckName("parameters.sessionProfileName", in.SessionProfileName)
	if err != nil {
		return nil, err
	}
	if _, err := policy.Compile(in.Scope); err != nil {
		return nil, apierr.Invalid("parameters.scope", "invalid session profile scope: %v", err)
	}
	if in.ExpirationSeconds != "" {
		if n, err := strconv.ParseInt(in.ExpirationSeconds, 10, 64); err != nil || n <= 0 {
			return nil, apierr.Invalid(
				"parameters.expirationSeconds",
				"must be a positive number of seconds, got %q",
				in.ExpirationSeconds,
			)
		}
	}
	if n, err := x.Tx.Count(x.Ctx, KindSessionProfile, x.OrgID, MaxProfiles); err != nil {
		return nil, apierr.Internalf(err, "counting session profiles")
	} else if n >= MaxProfiles {
		return nil, apierr.New(apierr.ResourceExhausted, "RESOURCE_EXHAUSTED", "an organization can have at most %d session profiles", MaxProfiles)
	}
	p := &Profile{
		ID:                id.New(),
		OrgID:             x.OrgID,
		Name:              name,
		Scope:             in.Scope,
		ExpirationSeconds: in.ExpirationSeconds,
		Notes:             in.Notes,
		CreatedAt:         x.Now,
		UpdatedAt:         x.Now,
	}
	err = records.Save(x.Ctx, x.Tx, KindSessionProfile, p.ID, p.OrgID, p.CreatedAt, p.UpdatedAt, p,
		store.Key{Name: keyProfileName, Value: p.OrgID + "/" + name, Unique: true})
	if err != nil {
		if apierr.From(err).Code == apierr.AlreadyExists {
			return nil, apierr.Invalid(
				"parameters.sessionProfileName",
				"a session profile named %q already exists",
				name,
			)
		}
		return nil, err
	}
	return wire.CreateSessionProfileResult{SessionProfileId: p.ID}, nil
}

func getProfile(q *activity.Read, in *wire.GetSessionProfileRequest) (any, error) {
	p, err := records.Load[Profile](q.Ctx, q.R, KindSessionProfile, q.OrgID, in.SessionProfileId, "session profile")
	if err != nil {
		return nil, err
	}
	return wire.GetSessionProfileResponse{SessionProfile: p.toWire()}, nil
}

func listProfiles(q *activity.Read, _ *wire.GetSessionProfilesRequest) (any, error) {
	ps, err := records.List[Profile](q.Ctx, q.R, KindSessionProfile, q.OrgID, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := wire.GetSessionProfilesResponse{SessionProfiles: make([]wire.SessionProfile, 0, len(ps))}
	for _, p := range ps {
		out.SessionProfiles = append(out.SessionProfiles, p.toWire())
	}
	return out, nil
}

// Find loads session profile profileID of orgID or, failing that, of orgID's parent: a parent
// organization's profiles apply to the logins of its sub-organizations' users.
func Find(ctx context.Context, r store.Reader, orgID, profileID string) (*Profile, error) {
	p, err := records.Load[Profile](ctx, r, KindSessionProfile, orgID, profileID, "session profile")
	if err == nil || apierr.From(err).Code != apierr.NotFound {
		return p, err
	}
	o, oerr := directory.LoadOrganization(ctx, r, orgID)
	if oerr != nil || o.ParentID == "" {
		return nil, err
	}
	return records.Load[Profile](ctx, r, KindSessionProfile, o.ParentID, profileID, "session profile")
}

// Scope is the compiled scope of a session profile, for the engine.
func Scope(ctx context.Context, r store.Reader, orgID, profileID string) (*policy.Expr, error) {
	p, err := Find(ctx, r, orgID, profileID)
	if err != nil {
		return nil, err
	}
	return policy.Compile(p.Scope)
}

func createInvitations(x *activity.Exec, in *wire.CreateInvitationsIntent) (any, error) {
	const field = "parameters.invitations"
	if len(in.Invitations) == 0 {
		return nil, apierr.Invalid(field, "at least one invitation is required")
	}
	n := len(in.Invitations)
	if err := organizations.CheckCount(field, n, organizations.MaxInvitationsPerRequest, "invitations"); err != nil {
		return nil, err
	}
	for i, inv := range in.Invitations {
		f := field + "[" + strconv.Itoa(i) + "].receiverUserTags"
		const limit = organizations.MaxTagsPerRequest
		if err := organizations.CheckIDs(f, inv.ReceiverUserTags, limit, "user tags"); err != nil {
			return nil, err
		}
	}
	ids := make([]string, 0, len(in.Invitations))
	for i, inv := range in.Invitations {
		f := "parameters.invitations[" + strconv.Itoa(i) + "]"
		if _, err := directory.CheckName(f+".receiverUserName", inv.ReceiverUserName); err != nil {
			return nil, err
		}
		if err := directory.CheckEmail(f+".receiverUserEmail", inv.ReceiverUserEmail); err != nil {
			return nil, err
		}
		if _, err := directory.LoadUser(x.Ctx, x.Tx, x.OrgID, inv.SenderUserId); err != nil {
			return nil, apierr.Invalid(f+".senderUserId", "no user %s in this organization", inv.SenderUserId)
		}
		for j, t := range inv.ReceiverUserTags {
			if _, err := directory.LoadUserTag(x.Ctx, x.Tx, x.OrgID, t); err != nil {
				return nil, apierr.Invalid(
					f+".receiverUserTags["+strconv.Itoa(j)+"]",
					"no user tag %s in this organization",
					t,
				)
			}
		}
		v := &Invitation{
			ID:       id.New(),
			OrgID:    x.OrgID,
			UserName: inv.ReceiverUserName,
			Email:    inv.ReceiverUserEmail,
			TagIDs:   append([]string{}, inv.ReceiverUserTags...),
			AccessType: string(
				inv.AccessType,
			),
			SenderUserID: inv.SenderUserId,
			Status:       "INVITATION_STATUS_CREATED",
			CreatedAt:    x.Now.Add(time.Duration(i)),
			UpdatedAt:    x.Now,
		}
		if err := records.Save(x.Ctx, x.Tx, KindInvitation, v.ID, v.OrgID, v.CreatedAt, v.UpdatedAt, v); err != nil {
			return nil, err
		}
		ids = append(ids, v.ID)
	}
	return wire.CreateInvitationsResult{InvitationIds: ids}, nil
}

func deleteInvitation(x *activity.Exec, in *wire.DeleteInvitationIntent) (any, error) {
	if _, err := records.Load[Invitation](x.Ctx, x.Tx, KindInvitation, x.OrgID, in.InvitationId, "invitation"); err != nil {
		return nil, apierr.Invalid("parameters.invitationId", "no invitation %s in this organization", in.InvitationId)
	}
	if err := records.Delete(x.Ctx, x.Tx, KindInvitation, in.InvitationId); err != nil {
		return nil, err
	}
	return wire.DeleteInvitationResult{InvitationId: in.InvitationId}, nil
}
