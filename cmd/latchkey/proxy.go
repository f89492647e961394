package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/latchkey/latchkey/internal/authproxy"
)

const proxyUsage = `usage: latchkey proxy <enable|update|disable|show> --org ORG_ID [flags]

  enable   turn the auth proxy on for a top-level organization (creates the proxy user and key);
           prints {"configId": ...}, the value frontends send as X-Auth-Proxy-Config-ID
  update   change the settings given as flags (the others keep their values)
  disable  turn the proxy off (deletes the proxy user and key; the config id and settings stay)
  show     print the configuration

Changes apply to running servers at once. Run "latchkey proxy enable -h" for the flags.`

// cmdProxy configures an organization's auth proxy in the store.
func cmdProxy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintln(stderr, proxyUsage)
		return usageError{"proxy: no subcommand given (enable, update, disable or show)"}
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "enable", "update", "disable", "show":
	default:
		fmt.Fprintln(stderr, proxyUsage)
		return usageError{fmt.Sprintf("proxy: unknown subcommand %q", sub)}
	}
	fs := flag.NewFlagSet("proxy "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var sf storeFlags
	sf.register(fs)
	org := fs.String("org", "", "the top-level organization's id (required)")
	var sfl settingsFlags
	if sub == "enable" || sub == "update" {
		sfl.register(fs)
	}
	if err := parseFlags(fs, rest); err != nil {
		return err
	}
	if *org == "" {
		return usageError{"--org is required"}
	}
	s, err := sf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	m := s.Proxy
	var c *authproxy.Config
	switch sub {
	case "enable":
		settings := authproxy.DefaultSettings()
		// Enabling a configuration that was disabled starts from its settings.
		if old, err := m.Get(ctx, *org); err == nil {
			settings = old.Settings
		}
		if err := sfl.apply(fs, &settings); err != nil {
			return err
		}
		if c, err = m.Enable(ctx, *org, settings); err != nil {
			return err
		}
		audit(ctx, s.Store, stderr, "proxy enabled", *org, c.Settings)
		return writeJSON(stdout, map[string]string{"configId": c.ID})
	case "update":
		var old *authproxy.Config
		if old, err = m.Get(ctx, *org); err != nil {
			return err
		}
		settings := old.Settings
		if err = sfl.apply(fs, &settings); err != nil {
			return err
		}
		c, err = m.Update(ctx, *org, settings)
	case "disable":
		c, err = m.Disable(ctx, *org)
	case "show":
		c, err = m.Get(ctx, *org)
	}
	if err != nil {
		return err
	}
	switch sub {
	case "update":
		audit(ctx, s.Store, stderr, "proxy updated", *org, c.Settings)
	case "disable":
		audit(ctx, s.Store, stderr, "proxy disabled", *org, nil)
	}
	return writeJSON(stdout, c)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// settingsFlags are the flags of proxy enable and update; only those given (on the command
// line or in the environment) change a setting.
type settingsFlags struct {
	origins, providers, clientIDs                          listFlag
	sessionExpiration                                      int64
	otpLength                                              int
	otpAlphanumeric, enabled                               bool
	redirectURL                                            string
	emailApp, emailLogo, emailSender, emailReply, emailVar string
	smsApp, smsTemplate                                    string
}

func (f *settingsFlags) register(fs *flag.FlagSet) {
	d := authproxy.DefaultSettings()
	fs.Var(
		&f.origins,
		"allowed-origins",
		`comma-separated exact origins (scheme://host[:port]) allowed to call the proxy; "*" allows every origin (the default)`,
	)
	fs.Int64Var(
		&f.sessionExpiration,
		"session-expiration-seconds",
		d.SessionExpirationSeconds,
		"lifetime of the sessions the proxy's logins issue",
	)
	fs.Var(
		&f.providers,
		"enabled-providers",
		"comma-separated login methods wallet_kit_config reports: "+strings.Join(
			authproxy.Providers,
			", ",
		)+" (default email,passkey)",
	)
	fs.IntVar(
		&f.otpLength,
		"otp-length",
		d.OTPLength,
		fmt.Sprintf("one-time code length (%d to %d)", authproxy.MinOTPLength, authproxy.MaxOTPLength),
	)
	fs.BoolVar(
		&f.otpAlphanumeric,
		"otp-alphanumeric",
		d.OTPAlphanumeric,
		"one-time codes of letters and digits instead of digits only",
	)
	fs.BoolVar(
		&f.enabled,
		"enabled",
		true,
		"update only: --enabled=false disables the proxy as disable does, --enabled=true enables it",
	)
	fs.Var(
		&f.clientIDs,
		"oauth-client-ids",
		"comma-separated provider=clientId pairs (google, apple, facebook, discord, x)",
	)
	fs.StringVar(&f.redirectURL, "oauth-redirect-url", "", "OAuth redirect URL reported by wallet_kit_config")
	fs.StringVar(&f.emailApp, "email-app-name", "", "application name in one-time-code e-mails")
	fs.StringVar(&f.emailLogo, "email-logo-url", "", "logo URL in one-time-code e-mails")
	fs.StringVar(&f.emailSender, "email-sender-name", "", "sender display name of one-time-code e-mails")
	fs.StringVar(&f.emailReply, "email-reply-to", "", "reply-to address of one-time-code e-mails")
	fs.StringVar(
		&f.emailVar,
		"email-template-variables",
		"",
		`JSON object of template values for the e-mail (e.g. {"supportUrl":"https://..."})`,
	)
	fs.StringVar(&f.smsApp, "sms-app-name", "", "application name in one-time-code text messages")
	fs.StringVar(&f.smsTemplate, "sms-template", "", "text message template; {{.OtpCode}} is the code")
}

// apply writes the flags that were given into s.
func (f *settingsFlags) apply(fs *flag.FlagSet, s *authproxy.Settings) error {
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	fs.VisitAll(func(fl *flag.Flag) {
		if _, ok := os.LookupEnv(EnvName(fl.Name)); ok {
			given[fl.Name] = true
		}
	})
	if fs.Name() == "proxy enable" && given["enabled"] {
		return usageError{"--enabled is a flag of proxy update; use proxy disable to turn the proxy off"}
	}
	set := map[string]func(){
		"allowed-origins":            func() { s.AllowedOrigins = f.origins },
		"session-expiration-seconds": func() { s.SessionExpirationSeconds = f.sessionExpiration },
		"enabled-providers":          func() { s.EnabledProviders = f.providers },
		"otp-length":                 func() { s.OTPLength = f.otpLength },
		"otp-alphanumeric":           func() { s.OTPAlphanumeric = f.otpAlphanumeric },
		"enabled":                    func() { s.Enabled = f.enabled },
		"oauth-redirect-url":         func() { s.OAuthRedirectURL = f.redirectURL },
		"email-app-name":             func() { s.Email.AppName = f.emailApp },
		"email-logo-url":             func() { s.Email.LogoURL = f.emailLogo },
		"email-sender-name":          func() { s.Email.SenderName = f.emailSender },
		"email-reply-to":             func() { s.Email.ReplyTo = f.emailReply },
		"email-template-variables":   func() { s.Email.TemplateVariables = f.emailVar },
		"sms-app-name":               func() { s.SMS.AppName = f.smsApp },
		"sms-template":               func() { s.SMS.Template = f.smsTemplate },
	}
	for name, fn := range set {
		if given[name] {
			fn()
		}
	}
	if given["oauth-client-ids"] {
		s.OAuthClientIDs = map[string]string{}
		for _, pair := range f.clientIDs {
			p, id, ok := strings.Cut(pair, "=")
			if !ok {
				return usageError{fmt.Sprintf("--oauth-client-ids: %q is not provider=clientId", pair)}
			}
			s.OAuthClientIDs[p] = id
		}
	}
	return nil
}
