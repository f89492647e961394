package organizations

import (
	"strconv"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/wire"
)

// subOrgSpec is create_sub_organization's parameters, whatever the version.
type subOrgSpec struct {
	Name              string
	RootUsers         []directory.UserSpec
	Threshold         int
	Wallet            *wire.WalletParams
	PrivateKeys       int // V3 only: private keys to create (not supported with the sub-organization)
	DisableEmailRecov bool
	DisableEmailAuth  bool
	DisableSMSAuth    bool
	DisableOTPEmail   bool
	VerificationToken string
	ClientSignature   *wire.ClientSignature
}

func b(p *bool) bool { return p != nil && *p }

const rootField = "parameters.rootUsers"

func rootUser(i int, name, email, phone string) directory.UserSpec {
	return directory.UserSpec{
		Name:        name,
		Email:       email,
		PhoneNumber: phone,
		Field:       rootField + "[" + strconv.Itoa(i) + "]",
	}
}

func subOrgFromIntent(intent any) (subOrgSpec, error) {
	var s subOrgSpec
	switch in := intent.(type) {
	case *wire.CreateSubOrganizationIntentV8:
		s = subOrgSpec{Name: in.SubOrganizationName, Threshold: int(in.RootQuorumThreshold), Wallet: in.Wallet,
			DisableEmailRecov: b(in.DisableEmailRecovery), DisableEmailAuth: b(in.DisableEmailAuth), DisableSMSAuth: b(in.DisableSmsAuth),
			DisableOTPEmail: b(in.DisableOtpEmailAuth), VerificationToken: in.VerificationToken, ClientSignature: in.ClientSignature}
		for i, u := range in.RootUsers {
			spec := rootUser(i, u.UserName, u.UserEmail, u.UserPhoneNumber)
			spec.APIKeys = directory.APIKeysV2(spec.Field+".apiKeys", u.ApiKeys)
			spec.Authenticators = directory.AuthenticatorsV2(spec.Field+".authenticators", u.Authenticators)
			spec.OAuthProviders = directory.OAuthV2(spec.Field+".oauthProviders", u.OauthProviders)
			s.RootUsers = append(s.RootUsers, spec)
		}
	case *wire.CreateSubOrganizationIntentV7:
		s = subOrgSpec{Name: in.SubOrganizationName, Threshold: int(in.RootQuorumThreshold), Wallet: in.Wallet,
			DisableEmailRecov: b(in.DisableEmailRecovery), DisableEmailAuth: b(in.DisableEmailAuth), DisableSMSAuth: b(in.DisableSmsAuth),
			DisableOTPEmail: b(in.DisableOtpEmailAuth), VerificationToken: in.VerificationToken, ClientSignature: in.ClientSignature}
		for i, u := range in.RootUsers {
			spec := rootUser(i, u.UserName, u.UserEmail, u.UserPhoneNumber)
			spec.APIKeys = directory.APIKeysV2(spec.Field+".apiKeys", u.ApiKeys)
			spec.Authenticators = directory.AuthenticatorsV2(spec.Field+".authenticators", u.Authenticators)
			spec.OAuthProviders = directory.OAuthV1(spec.Field+".oauthProviders", u.OauthProviders)
			s.RootUsers = append(s.RootUsers, spec)
		}
	case *wire.CreateSubOrganizationIntentV6:
		s = subOrgSpec{Name: in.SubOrganizationName, Threshold: int(in.RootQuorumThreshold), Wallet: in.Wallet,
			DisableEmailRecov: b(in.DisableEmailRecovery), DisableEmailAuth: b(in.DisableEmailAuth)}
		for i, u := range in.RootUsers {
			spec := rootUser(i, u.UserName, u.UserEmail, "")
			spec.APIKeys = directory.APIKeysV2(spec.Field+".apiKeys", u.ApiKeys)
			spec.Authenticators = directory.AuthenticatorsV2(spec.Field+".authenticators", u.Authenticators)
			spec.OAuthProviders = directory.OAuthV1(spec.Field+".oauthProviders", u.OauthProviders)
			s.RootUsers = append(s.RootUsers, spec)
		}
	case *wire.CreateSubOrganizationIntentV5:
		s = subOrgSpec{Name: in.SubOrganizationName, Threshold: int(in.RootQuorumThreshold), Wallet: in.Wallet,
			DisableEmailRecov: b(in.DisableEmailRecovery), DisableEmailAuth: b(in.DisableEmailAuth)}
		for i, u := range in.RootUsers {
			spec := rootUser(i, u.UserName, u.UserEmail, "")
			spec.APIKeys = directory.APIKeysV1(spec.Field+".apiKeys", u.ApiKeys)
			spec.Authenticators = directory.AuthenticatorsV2(spec.Field+".authenticators", u.Authenticators)
			spec.OAuthProviders = directory.OAuthV1(spec.Field+".oauthProviders", u.OauthProviders)
			s.RootUsers = append(s.RootUsers, spec)
		}
	case *wire.CreateSubOrganizationIntentV4:
		s = subOrgSpec{Name: in.SubOrganizationName, Threshold: int(in.RootQuorumThreshold), Wallet: in.Wallet,
			DisableEmailRecov: b(in.DisableEmailRecovery), DisableEmailAuth: b(in.DisableEmailAuth)}
		s.RootUsers = rootUsersV1(in.RootUsers)
	case *wire.CreateSubOrganizationIntentV3:
		s = subOrgSpec{Name: in.SubOrganizationName, Threshold: int(in.RootQuorumThreshold), PrivateKeys: len(in.PrivateKeys)}
		s.RootUsers = rootUsersV1(in.RootUsers)
	case *wire.CreateSubOrganizationIntentV2:
		s = subOrgSpec{Name: in.SubOrganizationName, Threshold: int(in.RootQuorumThreshold)}
		s.RootUsers = rootUsersV1(in.RootUsers)
	case *wire.CreateSubOrganizationIntent:
		// V1: one root user made from a single authenticator.
		s = subOrgSpec{Name: in.Name, Threshold: 1}
		spec := rootUser(0, "Root user", "", "")
		spec.Field = "parameters.rootAuthenticator"
		spec.Authenticators = directory.AuthenticatorsV2("parameters", []wire.AuthenticatorParamsV2{in.RootAuthenticator})
		spec.Authenticators[0].Field = "parameters.rootAuthenticator"
		s.RootUsers = []directory.UserSpec{spec}
	default:
		return s, apierr.Internalf(nil, "create_sub_organization: unexpected intent %T", intent)
	}
	return s, nil
}

func rootUsersV1(in []wire.RootUserParams) []directory.UserSpec {
	var out []directory.UserSpec
	for i, u := range in {
		spec := rootUser(i, u.UserName, u.UserEmail, "")
		spec.APIKeys = directory.APIKeysV1(spec.Field+".apiKeys", u.ApiKeys)
		spec.Authenticators = directory.AuthenticatorsV2(spec.Field+".authenticators", u.Authenticators)
		out = append(out, spec)
	}
	return out
}

// subOrgPrepared is what create_sub_organization's Prepare made: the new organization's id and
// its wallet, minted outside the transaction (the wallet's keys are bound to that id).
type subOrgPrepared struct {
	orgID  string
	minted any
}

func (d Deps) prepareSubOrganization(x *activity.Exec, intent any) (any, error) {
	s, err := subOrgFromIntent(intent)
	if err != nil || s.Wallet == nil || d.MintSubOrgWallet == nil {
		return nil, err
	}
	// Refused before the wallet is minted (its accounts are bounded where they are derived).
	if err := CheckUserSpecs(rootField, s.RootUsers); err != nil {
		return nil, err
	}
	p := &subOrgPrepared{orgID: id.New()}
	if p.minted, err = d.MintSubOrgWallet(x, p.orgID, s.Wallet); err != nil {
		return nil, err
	}
	return p, nil
}

func (d Deps) createSubOrganization(x *activity.Exec, intent any) (any, error) {
	s, err := subOrgFromIntent(intent)
	if err != nil {
		return nil, err
	}
	if err := CheckUserSpecs(rootField, s.RootUsers); err != nil {
		return nil, err
	}
	parent, err := directory.LoadOrganization(x.Ctx, x.Tx, x.OrgID)
	if err != nil {
		return nil, err
	}
	if parent.ParentID != "" {
		return nil, apierr.New(
			apierr.PermissionDenied,
			"INVALID_ACTIVITY_CALLER",
			"This activity cannot be called by sub-organizations",
		)
	}
	name, err := directory.CheckName("parameters.subOrganizationName", s.Name)
	if err != nil {
		return nil, err
	}
	if len(s.RootUsers) == 0 {
		return nil, apierr.Invalid(rootField, "at least one root user is required")
	}
	if s.Threshold < 1 || s.Threshold > len(s.RootUsers) {
		return nil, apierr.Invalid(
			"parameters.rootQuorumThreshold",
			"must be between 1 and the number of root users (%d), got %d",
			len(s.RootUsers),
			s.Threshold,
		)
	}
	if s.PrivateKeys > 0 {
		return nil, apierr.Unsupported(
			"create_sub_organization privateKeys (V3); create private keys with create_private_keys",
		)
	}
	var proven directory.Contact
	if s.VerificationToken != "" || s.ClientSignature != nil {
		if d.SignupToken == nil {
			return nil, apierr.Unsupported("create_sub_organization verificationToken/clientSignature")
		}
		if proven, err = d.SignupToken(x, s.VerificationToken, s.ClientSignature, s.RootUsers); err != nil {
			return nil, err
		}
	}
	if s.Wallet != nil && d.SubOrgWallet == nil {
		return nil, apierr.Unsupported("create_sub_organization wallet (arrives with wallets)")
	}
	o := NewOrganization(name, parent.ID, x)
	prepared, _ := x.Prepared.(*subOrgPrepared)
	if prepared != nil {
		o.ID = prepared.orgID
	}
	if err := markUnproven(x, o, s.RootUsers, proven); err != nil {
		return nil, err
	}
	o.DisableEmailRecovery, o.DisableEmailAuth, o.DisableSMSAuth, o.DisableOTPEmailAuth = s.DisableEmailRecov, s.DisableEmailAuth, s.DisableSMSAuth, s.DisableOTPEmail
	env := d.Env(x)
	rootIDs := make([]string, 0, len(s.RootUsers))
	for _, spec := range s.RootUsers {
		u, err := directory.CreateUser(x.Ctx, x.Tx, env, o.ID, spec)
		if err != nil {
			return nil, err
		}
		rootIDs = append(rootIDs, u.ID)
	}
	o.RootQuorum = directory.Quorum{UserIDs: rootIDs, Threshold: s.Threshold}
	if err := directory.SaveOrganization(x.Ctx, x.Tx, o); err != nil {
		return nil, err
	}
	res := wire.CreateSubOrganizationResultV8{SubOrganizationId: o.ID, RootUserIds: rootIDs}
	if s.Wallet != nil {
		if prepared == nil {
			return nil, apierr.Internalf(nil, "create_sub_organization: the wallet was not prepared")
		}
		if res.Wallet, err = d.SubOrgWallet(x, prepared.minted); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// markUnproven marks the root users' contacts that nobody vouched for (see
// directory.VouchedContacts): through the auth proxy, only the contact a verification token
// proved is stored as proven, so signing up someone else's address never makes it match a
// look-up or a login. A sign-up through the proxy must also name a credential or a proven
// contact: a sub-organization nobody can log in to is refused.
func markUnproven(
	x *activity.Exec,
	o *directory.Organization,
	users []directory.UserSpec,
	proven directory.Contact,
) error {
	if directory.VouchedContacts(x.Caller, o) {
		return nil
	}
	usable := false
	for i := range users {
		u := &users[i]
		u.EmailUnproven = u.Email != "" && (proven.Email == "" || !strings.EqualFold(u.Email, proven.Email))
		u.PhoneUnproven = u.PhoneNumber != "" && (proven.Phone == "" || u.PhoneNumber != proven.Phone)
		usable = usable || len(u.APIKeys)+len(u.Authenticators)+len(u.OAuthProviders) > 0 ||
			u.Email != "" && !u.EmailUnproven || u.PhoneNumber != "" && !u.PhoneUnproven
	}
	if !usable {
		return apierr.Invalid(
			rootField,
			"a sign-up must name a credential (apiKeys, authenticators or oauthProviders) "+
				"or carry a verificationToken proving the user's e-mail address or phone number",
		)
	}
	return nil
}
