package activity

import (
	"github.com/latchkey/latchkey/internal/apierr"
)

// InterimAuthorize is the authorization that holds until the policy engine replaces it:
//   - nothing crosses between unrelated organizations (the caller resolver only finds
//     credentials in the target organization or its parent);
//   - a parent organization reads its sub-organizations but can neither write nor sign in them,
//     except for operations marked ParentMayWrite;
//   - root users of an organization may do everything in it;
//   - other users may only manage their own credentials (AccessSelf) and take part in
//     activities open to every user (AccessAnyUser).
func InterimAuthorize(x *Exec, op *Operation, intent any) error {
	c := x.Caller
	if c.ParentAccess {
		if op.ParentMayWrite {
			return nil
		}
		return apierr.Denied("request not authorized: a parent organization can read a sub-organization but cannot change it or sign in it (%s)", op.Path)
	}
	if c.IsRoot() {
		return nil
	}
	switch op.Access {
	case AccessAnyUser:
		return nil
	case AccessSelf:
		if op.SelfUser != nil && op.SelfUser(x, intent) == c.User.ID {
			return nil
		}
		return apierr.Denied("request not authorized: a non-root user may only manage their own credentials (%s)", op.Path)
	}
	return apierr.Denied("request not authorized: only root users may submit %s in this organization until a policy allows it", op.Path)
}
