package otp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/wire"
)

// checkScript runs @turnkey/crypto's client functions on its arguments.
const checkScript = `
const c = require(process.env.TURNKEY_CRYPTO);
const [cmd, ...a] = process.argv.slice(2);
(async () => {
  if (cmd === 'encrypt') process.stdout.write(await c.encryptOtpCodeToBundle(a[0], a[1], a[2], a[3]));
  if (cmd === 'token') process.stdout.write(JSON.stringify(await c.verifyOtpVerificationToken(a[0], a[1])));
  if (cmd === 'session') process.stdout.write(String(await c.verifySessionJwtSignature(a[0], a[1])));
})().catch(e => { console.error(String(e)); process.exit(1); });
`

// nodeRunner runs checkScript with node and the e2e suite's @turnkey/crypto, or skips the test
// when either is missing.
func nodeRunner(t *testing.T) func(t *testing.T, args ...string) string {
	mod, _ := filepath.Abs("../../../e2e/node_modules/@turnkey/crypto")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(mod); err != nil || serr != nil {
		t.Skip("needs node and e2e/node_modules (npm ci in e2e)")
	}
	script := filepath.Join(t.TempDir(), "check.cjs")
	if err := os.WriteFile(script, []byte(checkScript), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.Command(node, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "TURNKEY_CRYPTO="+mod)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node %v: %v: %s", args[0], err, out)
		}
		return string(out)
	}
}

// TestAgainstTurnkeyCrypto: @turnkey/crypto's encryptOtpCodeToBundle accepts the target
// bundle (given the OTP key), verifyOtpVerificationToken accepts the token and reads back a
// contact with '~', '?' and non-ASCII exactly, and verifySessionJwtSignature accepts the session.
func TestAgainstTurnkeyCrypto(t *testing.T) {
	nodeRun := nodeRunner(t)
	h := newHarness(t, 0)
	otpID, bundle, err := h.initOTP(h.root, "a~b?c@exämple.com")
	if err != nil {
		t.Fatal(err)
	}
	code := h.lastCode()
	device := newClientKey(t)
	enc := nodeRun(t, "encrypt", code, bundle, device.pub, h.keys.PublicKey(custody.OTP))
	var vr wire.VerifyOtpResult
	h.mustSubmit(
		h.root,
		"verify_otp",
		"ACTIVITY_TYPE_VERIFY_OTP_V2",
		map[string]any{"otpId": otpID, "encryptedOtpBundle": enc},
		&vr,
	)
	claims := nodeRun(t, "token", vr.VerificationToken, h.keys.PublicKey(custody.OTP))
	t.Log(claims)
	if !strings.Contains(claims, `"contact":"a~b?c@exämple.com"`) {
		t.Fatalf("claims %s", claims)
	}
	// The session of a login, checked by verifySessionJwtSignature.
	otpID, bundle, _ = h.initOTP(h.root, aliceEmail)
	enc = nodeRun(t, "encrypt", h.lastCode(), bundle, device.pub, h.keys.PublicKey(custody.OTP))
	h.mustSubmit(
		h.root,
		"verify_otp",
		"ACTIVITY_TYPE_VERIFY_OTP_V2",
		map[string]any{"otpId": otpID, "encryptedOtpBundle": enc},
		&vr,
	)
	tid := decodeClaims(t, vr.VerificationToken)["id"].(string)
	sk := newClientKey(t)
	msg := loginMessage(sk.pub, tid)
	var lr wire.OtpLoginResult
	h.mustSubmit(
		h.parentRoot,
		"otp_login",
		"ACTIVITY_TYPE_OTP_LOGIN_V2",
		map[string]any{"verificationToken": vr.VerificationToken, "publicKey": sk.pub,
			"clientSignature": map[string]any{
				"publicKey": device.pub,
				"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
				"message":   msg,
				"signature": device.signRaw(msg),
			}},
		&lr,
	)
	if got := nodeRun(t, "session", lr.Session, h.keys.PublicKey(custody.Notarizer)); got != "true" {
		t.Fatalf("verifySessionJwtSignature: %s", got)
	}
	if got := nodeRun(t, "session", lr.Session, h.keys.PublicKey(custody.OTP)); got != "false" {
		t.Fatalf("verifySessionJwtSignature under another key: %s", got)
	}
}
