package otp

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/ops/login"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Record kinds.
const (
	KindOTP               = "otp"
	KindVerificationToken = "verification_token"
)

// OwnedKinds are the record kinds an organization owns here (deleted with the organization).
var OwnedKinds = []string{KindOTP, kindContactLock, KindVerificationToken, KindVerifiedContact}

// keyContact finds a contact's codes; its value is an HMAC of organization, type and contact.
// kindContactLock is a record per such value that init_otp writes to serialise its checks.
const (
	keyContact      = "otp.contact"
	kindContactLock = "otp_contact"
)

// OTP types.
const (
	TypeEmail = "OTP_TYPE_EMAIL"
	TypeSMS   = "OTP_TYPE_SMS"
)

// Defaults and bounds (docs/wire.md §4.2; swagger v1InitOtpIntentV3, v1VerifyOtpIntent).
const (
	DefaultLength       = 9
	MinLength           = 6
	MaxLength           = 9
	DefaultCodeSeconds  = 300
	MaxCodeSeconds      = 600
	MaxAttempts         = 3
	MaxLiveCodes        = 3
	DefaultSendLimit    = 3
	DefaultSendWindow   = 3 * time.Minute
	DefaultTokenSeconds = 3600
	MaxTokenSeconds     = 86400
)

// Messages the SDKs match on.
const (
	MsgInvalidCode = "Invalid OTP code"
	MsgMaxOTPs     = "Max number of OTPs have been initiated"
)

// Deps are what these operations need from the server configuration.
type Deps struct {
	Env func(x *activity.Exec) directory.Env
	// Messages queues the codes and links in the activity's transaction; they are sent once it
	// commits (messages.Outbox). A channel it cannot send on refuses that OTP type clearly.
	Messages Messages
	// SendLimit codes at most are sent to one contact per SendWindow (default 3 per 3 minutes).
	SendLimit  int
	SendWindow time.Duration
}

// Messages is what the operations need of the message outbox (messages.Outbox).
type Messages interface {
	CanEmail() bool
	CanSMS() bool
	Email(x *activity.Exec, m notify.Message) error
	SMS(x *activity.Exec, s notify.SMS) error
}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d Deps) (owned []string) {
	if d.SendLimit <= 0 {
		d.SendLimit = DefaultSendLimit
	}
	if d.SendWindow <= 0 {
		d.SendWindow = DefaultSendWindow
	}
	reg.Submit(
		activity.Operation{
			Path:           "init_otp",
			Access:         activity.AccessRoot,
			ParentMayWrite: true,
			Execute: activity.OnAny(
				d.initOTP,
				(*wire.InitOtpIntentV3)(nil),
				(*wire.InitOtpIntentV2)(nil),
				(*wire.InitOtpIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:           "verify_otp",
			Access:         activity.AccessRoot,
			ParentMayWrite: true,
			Execute:        activity.OnAny(d.verifyOTP, (*wire.VerifyOtpIntentV2)(nil), (*wire.VerifyOtpIntent)(nil)),
			Redact: activity.RedactAny(
				redactVerify,
				(*wire.VerifyOtpIntentV2)(nil),
				(*wire.VerifyOtpIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:           "otp_login",
			Access:         activity.AccessRoot,
			ParentMayWrite: true,
			Execute:        activity.OnAny(d.otpLogin, (*wire.OtpLoginIntentV2)(nil), (*wire.OtpLoginIntent)(nil)),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:           "init_otp_auth",
			Access:         activity.AccessRoot,
			ParentMayWrite: true,
			Execute: activity.OnAny(
				d.initOTP,
				(*wire.InitOtpAuthIntentV3)(nil),
				(*wire.InitOtpAuthIntentV2)(nil),
				(*wire.InitOtpAuthIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:           "otp_auth",
			Access:         activity.AccessRoot,
			ParentMayWrite: true,
			Execute:        activity.On(d.otpAuth),
			Redact:         activity.Redactor(redactOTPAuth),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:           "email_auth",
			Access:         activity.AccessRoot,
			ParentMayWrite: true,
			Execute: activity.OnAny(
				d.emailAuth,
				(*wire.EmailAuthIntentV3)(nil),
				(*wire.EmailAuthIntentV2)(nil),
				(*wire.EmailAuthIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:           "init_user_email_recovery",
			Access:         activity.AccessRoot,
			ParentMayWrite: true,
			Execute: activity.OnAny(
				d.initRecovery,
				(*wire.InitUserEmailRecoveryIntentV2)(nil),
				(*wire.InitUserEmailRecoveryIntent)(nil),
			),
		},
	)
	reg.Submit(
		activity.Operation{Path: "recover_user", Access: activity.AccessSelf, Execute: activity.On(d.recoverUser),
			SelfUser: activity.User(
				func(_ *activity.Exec, intent *wire.RecoverUserIntent) string { return intent.UserId },
			)},
	)
	reg.Query(activity.QueryOp{Path: "list_verified_suborgs", Execute: activity.Query(listVerifiedSuborgs)})
	reg.Submit(activity.Operation{Path: "stamp_login", Access: activity.AccessSelf, Execute: activity.On(d.stampLogin),
		SelfUser: activity.UserAny(
			func(x *activity.Exec, _ any) string { return x.Caller.User.ID },
			(*wire.StampLoginIntent)(nil),
		)})
	return OwnedKinds
}

// Code is the stored one-time code: never the code itself, only its MAC.
type Code struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Type      string    `json:"otpType"`
	Contact   string    `json:"contact"`
	MAC       []byte    `json:"mac"`
	Target    []byte    `json:"target,omitempty"` // the sealed private half of the encryption target
	Attempts  int       `json:"attempts"`
	Used      bool      `json:"used,omitempty"`
	ExpiresAt time.Time `json:"expiresAt"`
	CreatedAt time.Time `json:"createdAt"`
}

func (c *Code) live(now time.Time) bool {
	return !c.Used && c.Attempts < MaxAttempts && now.Before(c.ExpiresAt)
}

func (c *Code) binding() custody.Binding {
	return custody.Binding{OrgID: c.OrgID, Kind: KindOTP, ID: c.ID}
}

func saveCode(x *activity.Exec, tx store.Tx, c *Code, contactKey string) error {
	return records.Save(
		x.Ctx,
		tx,
		KindOTP,
		c.ID,
		c.OrgID,
		c.CreatedAt,
		x.Now,
		c,
		store.Key{Name: keyContact, Value: contactKey},
	)
}

// Token is a verification token's record: it exists until the token is used or expires.
type Token struct {
	ID        string    `json:"id"`
	OrgID     string    `json:"orgId"`
	Type      string    `json:"verificationType"`
	Contact   string    `json:"contact"`
	PublicKey string    `json:"publicKey,omitempty"`
	Used      bool      `json:"used,omitempty"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func codeMAC(x *activity.Exec, otpID, code string) []byte {
	return x.Services.Keyring.MAC("otp", []byte(otpID+"\x00"+normalizeCode(code)))
}

// normalizeCode makes the comparison forgiving of case and surrounding spaces (Crockford
// base32 is case-insensitive).
func normalizeCode(code string) string { return strings.ToUpper(strings.TrimSpace(code)) }

func contactKey(x *activity.Exec, otpType, contact string) string {
	return hex.EncodeToString(x.Services.Keyring.MAC("otp_contact", []byte(x.OrgID+"\x00"+otpType+"\x00"+contact)))
}

// Alphabets: Crockford's base32 (no I, L, O, U) and digits.
const (
	alphanumeric = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	numeric      = "0123456789"
)

func newCode(length int, alpha bool) (string, error) {
	set := numeric
	if alpha {
		set = alphanumeric
	}
	b := make([]byte, length)
	n := big.NewInt(int64(len(set)))
	for i := range b {
		v, err := rand.Int(rand.Reader, n)
		if err != nil {
			return "", err
		}
		b[i] = set[v.Int64()]
	}
	return string(b), nil
}

// normalizeContact checks a contact for its type: an e-mail address (lowercased) or an E.164
// phone number.
func normalizeContact(otpType, contact string) (string, error) {
	contact = strings.TrimSpace(contact)
	switch otpType {
	case TypeEmail:
		at := strings.LastIndexByte(contact, '@')
		if at <= 0 || at == len(contact)-1 || len(contact) > 254 || !utf8.ValidString(contact) ||
			strings.ContainsFunc(
				contact,
				func(r rune) bool { return r <= ' ' || r == 0x7f || strings.ContainsRune("<>()[]\\,;:\"", r) },
			) {
			return "", apierr.Invalid("parameters.contact", "must be an e-mail address")
		}
		return strings.ToLower(contact), nil
	case TypeSMS:
		digits := strings.TrimPrefix(contact, "+")
		if len(digits) == len(contact) || len(digits) < 7 || len(digits) > 15 ||
			strings.Trim(digits, "0123456789") != "" {
			return "", apierr.Invalid(
				"parameters.contact",
				"must be a phone number in E.164 form (+ and 7 to 15 digits)",
			)
		}
		return contact, nil
	}
	return "", apierr.Invalid("parameters.otpType", "must be %s or %s", TypeEmail, TypeSMS)
}

// initParams is what every version of init_otp says.
type initParams struct {
	otpType, contact, appName       string
	length                          *int32
	alpha                           *bool
	expiration                      string
	logoURL, templateVariables      string
	smsTemplate                     string
	senderName, replyTo, templateID string
	bundle                          bool // V2 and V3 answer with a target bundle
	auth                            bool // init_otp_auth: otp_auth answers with a credential
}

// initFields are the members of every init_otp and init_otp_auth version, by their JSON names:
// the versions differ only in which of them they carry (the app name moved from the e-mail
// customization to the top level in V3).
type initFields struct {
	OtpType                 string `json:"otpType"`
	Contact                 string `json:"contact"`
	AppName                 string `json:"appName"`
	OtpLength               *int32 `json:"otpLength"`
	Alphanumeric            *bool  `json:"alphanumeric"`
	ExpirationSeconds       string `json:"expirationSeconds"`
	SendFromEmailSenderName string `json:"sendFromEmailSenderName"`
	ReplyToEmailAddress     string `json:"replyToEmailAddress"`
	EmailCustomization      *struct {
		AppName           string `json:"appName"`
		LogoURL           string `json:"logoUrl"`
		TemplateVariables string `json:"templateVariables"`
		TemplateID        string `json:"templateId"`
	} `json:"emailCustomization"`
	SmsCustomization *struct {
		Template string `json:"template"`
	} `json:"smsCustomization"`
}

func readInit(intent any) initParams {
	var f initFields
	if b, err := json.Marshal(intent); err == nil {
		_ = json.Unmarshal(b, &f) // the intent's own JSON: it decodes
	}
	p := initParams{
		otpType:    f.OtpType,
		contact:    f.Contact,
		appName:    f.AppName,
		length:     f.OtpLength,
		alpha:      f.Alphanumeric,
		expiration: f.ExpirationSeconds,
		senderName: f.SendFromEmailSenderName,
		replyTo:    f.ReplyToEmailAddress,
	}
	if e := f.EmailCustomization; e != nil {
		p.logoURL, p.templateVariables, p.templateID = e.LogoURL, e.TemplateVariables, e.TemplateID
		if p.appName == "" {
			p.appName = e.AppName
		}
	}
	if f.SmsCustomization != nil {
		p.smsTemplate = f.SmsCustomization.Template
	}
	switch intent.(type) {
	case *wire.InitOtpIntentV3, *wire.InitOtpIntentV2:
		p.bundle = true
	case *wire.InitOtpAuthIntentV3, *wire.InitOtpAuthIntentV2, *wire.InitOtpAuthIntent:
		p.auth = true
	}
	return p
}

func (d Deps) initOTP(x *activity.Exec, intent any) (any, error) {
	p := readInit(intent)
	contact, err := normalizeContact(p.otpType, p.contact)
	if err != nil {
		return nil, err
	}
	length := DefaultLength
	if p.length != nil {
		length = int(*p.length)
		if length < MinLength || length > MaxLength {
			return nil, apierr.Invalid(
				"parameters.otpLength",
				"must be between %d and %d, got %d",
				MinLength,
				MaxLength,
				length,
			)
		}
	}
	alpha := p.alpha == nil || *p.alpha
	secs, err := login.Seconds("parameters.expirationSeconds", p.expiration, DefaultCodeSeconds, MaxCodeSeconds)
	if err != nil {
		return nil, err
	}
	if p.templateID != "" {
		return nil, activity.ErrNotSupported(
			"emailCustomization.templateId (stored e-mail templates); use templateVariables with the built-in template",
		)
	}
	switch {
	case p.otpType == TypeEmail && (d.Messages == nil || !d.Messages.CanEmail()):
		return nil, apierr.New(
			apierr.FailedPrecondition,
			"DELIVERY_NOT_CONFIGURED",
			"e-mail delivery is not configured on this server (--smtp-addr, or --dev for the outbox)",
		)
	case p.otpType == TypeSMS && (d.Messages == nil || !d.Messages.CanSMS()):
		return nil, apierr.New(
			apierr.FailedPrecondition,
			"DELIVERY_NOT_CONFIGURED",
			"SMS delivery is not configured on this server (--sms-twilio-*, or --dev for the outbox)",
		)
	}

	// The contact's codes: live ones are limited, recent sends are rate limited, and codes
	// both expired and out of the rate window are deleted.
	ck := contactKey(x, p.otpType, contact)
	// Writing the contact's lock record first serialises concurrent init_otp for one contact
	// (on PostgreSQL the second waits for the first to commit, then sees its code).
	if err := records.Save(x.Ctx, x.Tx, kindContactLock, ck, x.OrgID, x.Now, x.Now, struct{}{}); err != nil {
		return nil, err
	}
	codes, err := records.LookupAll[Code](x.Ctx, x.Tx, keyContact, ck, KindOTP, x.OrgID)
	if err != nil {
		return nil, err
	}
	live, sent := 0, 0
	var oldest time.Time
	since := x.Now.Add(-d.SendWindow)
	for _, c := range codes {
		if c.live(x.Now) {
			live++
		}
		if c.CreatedAt.After(since) {
			sent++
			if oldest.IsZero() || c.CreatedAt.Before(oldest) {
				oldest = c.CreatedAt
			}
		} else if !x.Now.Before(c.ExpiresAt) || c.Used || c.Attempts >= MaxAttempts {
			if err := records.Delete(x.Ctx, x.Tx, KindOTP, c.ID); err != nil {
				return nil, err
			}
		}
	}
	if live >= MaxLiveCodes {
		return nil, apierr.New(
			apierr.ResourceExhausted,
			"RESOURCE_EXHAUSTED",
			"%s for this contact: at most %d codes may be live at once; use or let one expire",
			MsgMaxOTPs,
			MaxLiveCodes,
		)
	}
	if sent >= d.SendLimit {
		wait := oldest.Add(d.SendWindow).Sub(x.Now).Round(time.Second)
		return nil, apierr.New(
			apierr.ResourceExhausted,
			"RATE_LIMITED",
			"too many codes sent to this contact: at most %d every %s; try again in %s",
			d.SendLimit,
			d.SendWindow,
			wait,
		)
	}

	code, err := newCode(length, alpha)
	if err != nil {
		return nil, apierr.Internalf(err, "generating a code")
	}
	c := &Code{
		ID:        id.New(),
		OrgID:     x.OrgID,
		Type:      p.otpType,
		Contact:   contact,
		ExpiresAt: x.Now.Add(time.Duration(secs) * time.Second),
		CreatedAt: x.Now,
	}
	c.MAC = codeMAC(x, c.ID, code)
	var bundle string
	if p.bundle {
		if x.Services.Custodian == nil {
			return nil, apierr.Internalf(errors.New("no custodian"), "making the OTP target")
		}
		if bundle, c.Target, err = x.Services.Custodian.NewOTPTarget(c.binding(), x.OrgID); err != nil {
			return nil, apierr.Internalf(err, "making the OTP target")
		}
	}
	if err := saveCode(x, x.Tx, c, ck); err != nil {
		return nil, err
	}
	if err := d.deliver(x, p, contact, code, secs); err != nil {
		// The code is burned, never usable, but kept until it leaves the rate window: a failed
		// send still counts toward the contact's send rate, so a failing (or costly) route
		// cannot be retried without bound.
		c.Attempts, c.Target = MaxAttempts, nil
		if serr := saveCode(x, x.Tx, c, ck); serr != nil {
			return nil, serr
		}
		return nil, activity.FailKeepingWrites(err)
	}
	if p.auth {
		return wire.InitOtpAuthResultV2{OtpId: c.ID}, nil
	}
	if !p.bundle {
		return wire.InitOtpResult{OtpId: c.ID}, nil
	}
	return wire.InitOtpResultV2{OtpId: c.ID, OtpEncryptionTargetBundle: bundle}, nil
}

// deliver sends the code. Its errors never carry the code.
func (d Deps) deliver(x *activity.Exec, p initParams, contact, code string, secs int64) error {
	var err error
	var what string
	switch p.otpType {
	case TypeEmail:
		what = "e-mail"
		values, verr := notify.ParseTemplateVariables(p.templateVariables)
		if verr != nil {
			return deliveryError(what, verr, code)
		}
		m, rerr := notify.RenderOTPEmail(
			notify.OTPEmail{To: contact, AppName: p.appName, LogoURL: p.logoURL, Code: code,
				ExpiryMinutes: int(
					(secs + 59) / 60,
				), SenderName: p.senderName, ReplyTo: p.replyTo, TemplateValues: values},
		)
		if rerr != nil {
			return deliveryError(what, rerr, code)
		}
		err = d.Messages.Email(x, m)
	case TypeSMS:
		what = "SMS"
		s, rerr := notify.RenderOTPSMSTemplate(p.smsTemplate, p.appName, code)
		if rerr != nil {
			return deliveryError(what, rerr, code)
		}
		s.To = contact
		err = d.Messages.SMS(x, s)
	}
	if err != nil {
		return deliveryError(what, err, code)
	}
	return nil
}

func deliveryError(what string, err error, code string) error {
	msg := strings.ReplaceAll(err.Error(), code, "[redacted]")
	if errors.Is(err, notify.ErrInvalidMessage) {
		return apierr.New(
			apierr.InvalidArgument,
			"INVALID_REQUEST",
			"the one-time code %s cannot be sent as asked: %s",
			what,
			msg,
		)
	}
	return &apierr.Error{
		Code:        apierr.Unavailable,
		TurnkeyCode: "DELIVERY_FAILED",
		Message: fmt.Sprintf(
			"the one-time code could not be delivered by %s; no code was issued, try again: %s",
			what,
			msg,
		),
	}
}

// redactVerify removes the plain code of the legacy verify_otp from what is stored and echoed.
func redactVerify(intent any) any {
	if in, ok := intent.(*wire.VerifyOtpIntent); ok {
		c := *in
		c.OtpCode = "[redacted]"
		return &c
	}
	return intent
}

func invalidCode(format string, args ...any) error {
	msg := MsgInvalidCode
	if format != "" {
		msg += " (" + fmt.Sprintf(format, args...) + ")"
	}
	return apierr.New(apierr.InvalidArgument, "INVALID_OTP_CODE", "%s", msg)
}

// sweepBatch bounds the stale verification tokens one verify_otp removes: each verify_otp
// makes one token and removes up to this many used or expired ones, so they cannot pile up.
const sweepBatch = 16

// sweepTokens deletes the organization's oldest verification tokens that are used or expired
// (either is refused at login anyway, as an unknown token).
func sweepTokens(x *activity.Exec) error {
	ts, err := records.List[Token](x.Ctx, x.Tx, KindVerificationToken, x.OrgID, store.ListOptions{Limit: sweepBatch})
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Used || !x.Now.Before(t.ExpiresAt) {
			if err := records.Delete(x.Ctx, x.Tx, KindVerificationToken, t.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// loadLiveCode loads the organization's code otpID, refusing one used, burned or expired.
func loadLiveCode(x *activity.Exec, otpID string) (*Code, error) {
	c, err := records.Load[Code](x.Ctx, x.Tx, KindOTP, x.OrgID, otpID, "OTP")
	if err != nil {
		return nil, err
	}
	switch {
	case c.Used:
		return nil, invalidCode("this code was already used; start over with init_otp")
	case c.Attempts >= MaxAttempts:
		return nil, invalidCode("too many attempts; start over with init_otp")
	case !x.Now.Before(c.ExpiresAt):
		return nil, invalidCode("this code has expired; start over with init_otp")
	}
	return c, nil
}

// attempt checks code against c and uses c up when it matches. A wrong code counts an attempt,
// kept although the activity fails (the count is written in the activity's transaction, which
// commits with the failed activity, so concurrent guesses cannot outrun it); the third burns c.
func (c *Code) attempt(x *activity.Exec, code string) error {
	c.Attempts++
	if !custody.EqualMAC(codeMAC(x, c.ID, code), c.MAC) {
		if c.Attempts >= MaxAttempts {
			c.Target = nil // burned: nothing will be opened with it again
		}
		if err := saveCode(x, x.Tx, c, contactKey(x, c.Type, c.Contact)); err != nil {
			return err
		}
		if left := MaxAttempts - c.Attempts; left > 0 {
			return activity.FailKeepingWrites(invalidCode("%d attempt(s) left", left))
		}
		return activity.FailKeepingWrites(invalidCode("no attempts left; start over with init_otp"))
	}
	c.Used, c.Target = true, nil
	return saveCode(x, x.Tx, c, contactKey(x, c.Type, c.Contact))
}

func (d Deps) verifyOTP(x *activity.Exec, intent any) (any, error) {
	var otpID, expiration string
	switch in := intent.(type) {
	case *wire.VerifyOtpIntentV2:
		otpID, expiration = in.OtpId, in.ExpirationSeconds
	case *wire.VerifyOtpIntent:
		otpID, expiration = in.OtpId, in.ExpirationSeconds
	}
	tokenSecs, err := login.Seconds("parameters.expirationSeconds", expiration, DefaultTokenSeconds, MaxTokenSeconds)
	if err != nil {
		return nil, err
	}
	c, err := loadLiveCode(x, otpID)
	if err != nil {
		return nil, err
	}
	var code, publicKey string
	switch in := intent.(type) {
	case *wire.VerifyOtpIntentV2:
		if c.Target == nil {
			return nil, apierr.Invalid("parameters.encryptedOtpBundle", "this OTP was initiated without a target bundle (INIT_OTP v1): verify it with ACTIVITY_TYPE_VERIFY_OTP and the plain code")
		}
		code, publicKey, err = x.Services.Custodian.OpenOTPBundle(in.EncryptedOtpBundle, c.Target, c.binding())
		if err != nil {
			if errors.Is(err, custody.ErrUnseal) {
				return nil, apierr.Internalf(err, "opening the OTP target")
			}
			return nil, apierr.Invalid("parameters.encryptedOtpBundle", "%v", err)
		}
	case *wire.VerifyOtpIntent:
		code, publicKey = in.OtpCode, in.PublicKey
	}
	if publicKey != "" {
		if _, err := custody.ParseP256PublicKeyHex(publicKey); err != nil {
			return nil, apierr.Invalid("parameters.publicKey", "must be a P-256 public key in hex: %v", err)
		}
	}
	if err := c.attempt(x, code); err != nil {
		return nil, err
	}
	if err := sweepTokens(x); err != nil {
		return nil, err
	}
	if err := markVerified(x, c.Type, c.Contact); err != nil {
		return nil, err
	}
	t := &Token{
		ID:        id.New(),
		OrgID:     x.OrgID,
		Type:      c.Type,
		Contact:   c.Contact,
		PublicKey: publicKey,
		ExpiresAt: x.Now.Add(time.Duration(tokenSecs) * time.Second),
	}
	if err := records.Save(x.Ctx, x.Tx, KindVerificationToken, t.ID, t.OrgID, x.Now, x.Now, t); err != nil {
		return nil, err
	}
	tok, err := EncodeToken(
		TokenClaims{Exp: strconv.FormatInt(t.ExpiresAt.UnixMilli(), 10), ID: t.ID, OrganizationID: t.OrgID,
			VerificationType: t.Type, Contact: t.Contact, PublicKey: t.PublicKey},
		func(digest []byte) ([]byte, error) {
			return x.Services.ServerKeys.SignDigestRaw(custody.OTP, digest)
		},
	)
	if err != nil {
		return nil, apierr.Internalf(err, "signing the verification token")
	}
	return wire.VerifyOtpResult{VerificationToken: tok}, nil
}
