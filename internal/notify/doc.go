// Package notify delivers one-time codes and links to people: e-mail over
// SMTP, SMS through a Twilio-compatible REST API, and, for development
// without a provider, a JSON-lines outbox file.
//
// # What it owns
//
//   - Emailer and Texter, the two delivery interfaces the login activities
//     call, and their implementations: SMTP (net/smtp; STARTTLS, implicit TLS,
//     or plain for loopback test servers), Twilio (form-encoded POST with basic
//     auth to {BaseURL}/2010-04-01/Accounts/{SID}/Messages.json) and Outbox
//     (one JSON line per message, mode 0600, fsync per write).
//   - The MIME message: multipart/alternative with a text and an HTML part,
//     RFC 5322 headers (Date, Message-ID, From with an RFC 2047 encoded
//     display name, To, Reply-To, Subject), quoted-printable bodies.
//   - The one-time-code e-mail and SMS (RenderOTPEmail, RenderOTPSMS,
//     RenderOTPSMSTemplate for the wire's smsCustomization) and the sign-in
//     e-mail carrying a credential bundle, as a magic link or as text
//     (RenderLinkEmail), rendered from embedded templates with the
//     customization the spec allows: app name, logo URL, template values
//     (escaped by html/template, never interpreted), sender name, reply-to.
//
// # What it must never do
//
//   - Put a one-time code, an SMTP password or a Twilio auth token into an
//     error or a log line. Errors name the step and the server's answer.
//   - Authenticate to an SMTP server over a connection that is not TLS.
//   - Decide anything about codes: generating, storing, counting attempts and
//     rate limiting belong to the callers. notify only delivers.
package notify
