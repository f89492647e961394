package otp

import (
	"context"
	"encoding/hex"
	"errors"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// KindVerifiedContact records that an organization verified a contact with a one-time code. Its
// id is an HMAC of organization, type and contact (the contact itself is not stored here).
const KindVerifiedContact = "otp_verified_contact"

// Verified is a verified contact.
type Verified struct {
	OrgID      string    `json:"orgId"`
	Type       string    `json:"type"`
	VerifiedAt time.Time `json:"verifiedAt"`
}

func verifiedID(kr *custody.Keyring, orgID, otpType, contact string) string {
	return hex.EncodeToString(kr.MAC("otp_verified", []byte(orgID+"\x00"+otpType+"\x00"+contact)))
}

// markVerified records that x's organization verified the contact (verify_otp, otp_auth).
func markVerified(x *activity.Exec, otpType, contact string) error {
	return records.Save(
		x.Ctx,
		x.Tx,
		KindVerifiedContact,
		verifiedID(x.Services.Keyring, x.OrgID, otpType, contact),
		x.OrgID,
		x.Now,
		x.Now,
		Verified{OrgID: x.OrgID, Type: otpType, VerifiedAt: x.Now},
	)
}

func isVerified(
	ctx context.Context,
	r store.Reader,
	kr *custody.Keyring,
	orgID, otpType, contact string,
) (bool, error) {
	_, err := r.Get(ctx, KindVerifiedContact, verifiedID(kr, orgID, otpType, contact))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return false, apierr.Internalf(err, "reading verified contacts")
}

// listVerifiedSuborgs: the sub-organizations with a user whose e-mail address or phone number
// was verified with a one-time code, by the parent (the auth proxy's organization) or by the
// sub-organization itself.
func listVerifiedSuborgs(q *activity.Read, in *wire.GetVerifiedSubOrgIdsRequest) (any, error) {
	otpType := map[string]string{"EMAIL": TypeEmail, "PHONE_NUMBER": TypeSMS}[in.FilterType]
	if otpType == "" {
		return nil, apierr.Invalid("filterType", "must be EMAIL or PHONE_NUMBER, got %q", in.FilterType)
	}
	contact, err := normalizeContact(otpType, in.FilterValue)
	if err != nil {
		return nil, apierr.Invalid("filterValue", "%s", apierr.From(err).Message)
	}
	parent := q.Caller.Target.ID
	ids, err := organizations.SubOrgsMatching(q.Ctx, q.R, parent, in.FilterType, contact)
	if err != nil {
		return nil, err
	}
	kr := q.Services.Keyring
	byParent, err := isVerified(q.Ctx, q.R, kr, parent, otpType, contact)
	if err != nil {
		return nil, err
	}
	out := wire.GetVerifiedSubOrgIdsResponse{OrganizationIds: []string{}}
	for _, id := range ids {
		ok := byParent
		if !ok {
			if ok, err = isVerified(q.Ctx, q.R, kr, id, otpType, contact); err != nil {
				return nil, err
			}
		}
		if ok {
			out.OrganizationIds = append(out.OrganizationIds, id)
		}
	}
	return out, nil
}
