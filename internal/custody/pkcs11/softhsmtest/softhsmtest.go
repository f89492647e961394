package softhsmtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// modulePaths are where Debian's softhsm2 package puts the module.
var modulePaths = []string{
	"/usr/lib/softhsm/libsofthsm2.so",
	"/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
	"/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
	"/usr/local/lib/softhsm/libsofthsm2.so",
}

// Module is the SoftHSM2 module's path. Where SoftHSM2 is not installed the test is skipped, or
// fails when LATCHKEY_REQUIRE_SOFTHSM is set (CI installs it: a skip there would hide a gap).
func Module(t testing.TB) string {
	t.Helper()
	missing := t.Skipf
	if os.Getenv("LATCHKEY_REQUIRE_SOFTHSM") != "" {
		missing = t.Fatalf
	}
	if _, err := exec.LookPath("softhsm2-util"); err != nil {
		missing("SoftHSM2 is not installed (Debian: apt-get install softhsm2): softhsm2-util is not on PATH")
		return ""
	}
	for _, p := range modulePaths {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	missing("SoftHSM2 is not installed: no libsofthsm2.so in %v", modulePaths)
	return ""
}

// NewToken points SOFTHSM2_CONF (for the test's duration) at a configuration whose token
// directory is a temporary directory, initializes a token there with the given label, SO PIN
// and user PIN, and returns the module's path. Every token made before in the test is gone.
func NewToken(t testing.TB, label, soPIN, pin string) string {
	t.Helper()
	module := Module(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.Mkdir(tokens, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "softhsm2.conf")
	if err := os.WriteFile(conf, []byte("directories.tokendir = "+tokens+"\nobjectstore.backend = file\nlog.level = ERROR\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SOFTHSM2_CONF", conf)
	out, err := exec.Command("softhsm2-util", "--init-token", "--free", "--label", label, "--so-pin", soPIN, "--pin", pin).
		CombinedOutput()
	if err != nil {
		t.Fatalf("softhsm2-util --init-token: %v\n%s", err, out)
	}
	return module
}
