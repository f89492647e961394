package otp

import (
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/ops/login"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/wire"
)

// The credential-bundle activities: otp_auth, email_auth and the e-mail recovery. Each makes a
// fresh P-256 API key for a user, registers its public half as an expiring key of the user, and
// hands the private half over only encrypted to the client's targetPublicKey (a credential
// bundle, docs/wire.md §3.4): in the result (otp_auth) or in an e-mail (email_auth, recovery),
// so that the e-mail's reader, not the caller, gets the credential.

func redactOTPAuth(p *wire.OtpAuthIntent) any {
	in := *p
	in.OtpCode = "[redacted]"
	return &in
}

// otpAuth checks the code of an init_otp_auth and answers with a credential for the user with
// the code's contact.
func (d Deps) otpAuth(x *activity.Exec, in *wire.OtpAuthIntent) (any, error) {
	c, err := loadLiveCode(x, in.OtpId)
	if err != nil {
		return nil, err
	}
	if _, err := custody.ParseP256PublicKeyHex(in.TargetPublicKey); err != nil {
		return nil, apierr.Invalid("parameters.targetPublicKey", "must be a P-256 public key in hex: %v", err)
	}
	if err := c.attempt(x, in.OtpCode); err != nil {
		return nil, err
	}
	if err := markVerified(x, c.Type, c.Contact); err != nil {
		return nil, err
	}
	u, err := contactUser(x, c.Type, c.Contact)
	if err != nil {
		return nil, err
	}
	k, bundle, err := login.Bundle(
		x,
		d.Env(x),
		u,
		in.TargetPublicKey,
		in.ApiKeyName,
		in.ExpirationSeconds,
		directory.CredentialOTPAuth,
		in.InvalidateExisting != nil && *in.InvalidateExisting,
	)
	if err != nil {
		return nil, err
	}
	return wire.OtpAuthResult{UserId: u.ID, ApiKeyId: k.ID, CredentialBundle: bundle}, nil
}

// linkParams is what every version of email_auth and init_user_email_recovery says.
type linkParams struct {
	email, target, apiKeyName, expiration string
	invalidate                            bool
	custom                                wire.EmailAuthCustomizationParams
	senderName, replyTo                   string
}

func readLink(intent any) linkParams {
	var p linkParams
	opt := func(c *wire.EmailCustomizationParams) {
		if c != nil {
			p.custom = wire.EmailAuthCustomizationParams{
				AppName:           c.AppName,
				LogoUrl:           c.LogoUrl,
				MagicLinkTemplate: c.MagicLinkTemplate,
				TemplateVariables: c.TemplateVariables,
				TemplateId:        c.TemplateId,
			}
		}
	}
	switch in := intent.(type) {
	case *wire.EmailAuthIntentV3:
		p = linkParams{email: in.Email, target: in.TargetPublicKey, apiKeyName: in.ApiKeyName, expiration: in.ExpirationSeconds,
			invalidate: in.InvalidateExisting != nil && *in.InvalidateExisting, custom: in.EmailCustomization,
			senderName: in.SendFromEmailSenderName, replyTo: in.ReplyToEmailAddress}
	case *wire.EmailAuthIntentV2:
		p = linkParams{email: in.Email, target: in.TargetPublicKey, apiKeyName: in.ApiKeyName, expiration: in.ExpirationSeconds,
			invalidate: in.InvalidateExisting != nil && *in.InvalidateExisting, senderName: in.SendFromEmailSenderName, replyTo: in.ReplyToEmailAddress}
		opt(in.EmailCustomization)
	case *wire.EmailAuthIntent:
		p = linkParams{email: in.Email, target: in.TargetPublicKey, apiKeyName: in.ApiKeyName, expiration: in.ExpirationSeconds,
			invalidate: in.InvalidateExisting != nil && *in.InvalidateExisting, senderName: in.SendFromEmailSenderName, replyTo: in.ReplyToEmailAddress}
		opt(in.EmailCustomization)
	case *wire.InitUserEmailRecoveryIntentV2:
		p = linkParams{email: in.Email, target: in.TargetPublicKey, expiration: in.ExpirationSeconds, custom: in.EmailCustomization,
			senderName: in.SendFromEmailSenderName, replyTo: in.ReplyToEmailAddress}
	case *wire.InitUserEmailRecoveryIntent:
		p = linkParams{email: in.Email, target: in.TargetPublicKey, expiration: in.ExpirationSeconds,
			senderName: in.SendFromEmailSenderName, replyTo: in.ReplyToEmailAddress}
		opt(in.EmailCustomization)
	}
	return p
}

// emailCredential makes the credential of credType for the user with the e-mail address and
// sends its bundle to that address through the message outbox: queued in the activity's
// transaction, sent once it commits (retried if the send fails).
func (d Deps) emailCredential(
	x *activity.Exec,
	p linkParams,
	credType string,
) (*directory.User, *directory.APIKey, error) {
	if d.Messages == nil || !d.Messages.CanEmail() {
		return nil, nil, apierr.New(
			apierr.FailedPrecondition,
			"DELIVERY_NOT_CONFIGURED",
			"e-mail delivery is not configured on this server (--smtp-addr, or --dev for the outbox)",
		)
	}
	if p.custom.TemplateId != "" {
		return nil, nil, activity.ErrNotSupported(
			"emailCustomization.templateId (stored e-mail templates); use templateVariables with the built-in template",
		)
	}
	email, err := normalizeContact(TypeEmail, p.email)
	if err != nil {
		return nil, nil, apierr.Invalid("parameters.email", "%v", apierr.From(err).Message)
	}
	values, err := notify.ParseTemplateVariables(p.custom.TemplateVariables)
	if err != nil {
		return nil, nil, apierr.Invalid("parameters.emailCustomization.templateVariables", "%v", err)
	}
	us, err := directory.UsersByEmail(x.Ctx, x.Tx, x.OrgID, email)
	if err != nil {
		return nil, nil, err
	}
	switch len(us) {
	case 0:
		return nil, nil, apierr.NotFoundf("no user of organization %s has the e-mail address %s", x.OrgID, email)
	case 1:
	default:
		return nil, nil, apierr.New(
			apierr.FailedPrecondition,
			"INVALID_REQUEST",
			"%d users of organization %s have the e-mail address; cannot tell which one signs in",
			len(us),
			x.OrgID,
		)
	}
	k, bundle, err := login.Bundle(x, d.Env(x), us[0], p.target, p.apiKeyName, p.expiration, credType, p.invalidate)
	if err != nil {
		return nil, nil, err
	}
	app := p.custom.AppName
	if app == "" {
		app = "Latchkey"
	}
	m, err := notify.RenderLinkEmail(
		notify.LinkEmail{
			To:                email,
			AppName:           app,
			LogoURL:           p.custom.LogoUrl,
			MagicLinkTemplate: p.custom.MagicLinkTemplate,
			Bundle:            bundle,
			ExpiryMinutes:     int((k.ExpiresAt.Sub(x.Now).Seconds() + 59) / 60),
			SenderName:        p.senderName,
			ReplyTo:           p.replyTo,
			TemplateValues:    values,
		},
	)
	if err != nil {
		return nil, nil, apierr.Invalid(
			"parameters.emailCustomization",
			"%s",
			strings.ReplaceAll(err.Error(), bundle, "[redacted]"),
		)
	}
	if err := d.Messages.Email(x, m); err != nil {
		return nil, nil, &apierr.Error{Code: apierr.Unavailable, TurnkeyCode: "DELIVERY_FAILED",
			Message: "the e-mail could not be delivered; no credential was issued, try again: " + strings.ReplaceAll(
				err.Error(),
				bundle,
				"[redacted]",
			)}
	}
	return us[0], k, nil
}

func (d Deps) emailAuth(x *activity.Exec, intent any) (any, error) {
	u, k, err := d.emailCredential(x, readLink(intent), directory.CredentialEmailAuth)
	if err != nil {
		return nil, err
	}
	return wire.EmailAuthResult{UserId: u.ID, ApiKeyId: k.ID}, nil
}

func (d Deps) initRecovery(x *activity.Exec, intent any) (any, error) {
	p := readLink(intent)
	p.apiKeyName = ""
	u, _, err := d.emailCredential(x, p, directory.CredentialRecoverUser)
	if err != nil {
		return nil, err
	}
	return wire.InitUserEmailRecoveryResult{UserId: u.ID}, nil
}

// recoverUser adds a passkey to the user, stamped by that user's recovery credential, which it
// then removes: a recovery credential recovers once.
func (d Deps) recoverUser(x *activity.Exec, in *wire.RecoverUserIntent) (any, error) {
	c := x.Caller
	if c.CredentialType != directory.CredentialRecoverUser || c.User.ID != in.UserId {
		return nil, apierr.Denied(
			"request not authorized: recover_user must be stamped with the user's own recovery credential (init_user_email_recovery)",
		)
	}
	specs := directory.AuthenticatorsV2("parameters", []wire.AuthenticatorParamsV2{in.Authenticator})
	if len(specs) != 1 {
		return nil, apierr.Required("parameters.authenticator")
	}
	specs[0].Field = "parameters.authenticator"
	if err := organizations.CheckAuthenticators("parameters", specs); err != nil {
		return nil, err
	}
	a, err := directory.CreateAuthenticator(x.Ctx, x.Tx, d.Env(x), c.User, specs[0])
	if err != nil {
		return nil, err
	}
	if err := directory.Delete(x.Ctx, x.Tx, directory.KindAPIKey, c.CredentialID); err != nil {
		return nil, err
	}
	return wire.RecoverUserResult{AuthenticatorId: []string{a.ID}}, nil
}
