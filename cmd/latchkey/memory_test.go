package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/custody/hd"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/stamp"
)

// TestCoreDumpHoldsNoKeyMaterial dumps a real production `latchkey serve` with gcore after it has
// created wallets and a private key, signed with each, exported a wallet and a key (HPKE to a
// client key) and imported a wallet, and searches the dump for every secret it handled: the
// master key (raw and as the hex of its file), each mnemonic (its text, and the text XOR the HMAC
// pads, which is what an HMAC keyed by it keeps), each BIP-39 seed, each BIP-32/SLIP-10 master
// private key and each account or standalone private key.
//
// The server is the production one (no --dev; a master key file), run as an unprivileged user,
// so it made itself non-dumpable (PR_SET_DUMPABLE 0). The test first checks what that buys:
// gcore run as the server's own user is refused, though it dumps another process of that user.
// Root keeps CAP_SYS_PTRACE, so gcore as root still dumps the hardened server: that dump, what an
// attacker with root (or the machine's memory) would get, is the one searched.
func TestCoreDumpHoldsNoKeyMaterial(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("gcore and the memory protections are Linux only")
	}
	gcore, err := exec.LookPath("gcore")
	if err != nil {
		if os.Getenv("LATCHKEY_REQUIRE_GCORE") == "1" {
			t.Fatal("LATCHKEY_REQUIRE_GCORE=1 but gcore (gdb) is not installed")
		}
		t.Skip("gcore (gdb) is not installed: the core dump test needs it")
	}
	if testing.Short() {
		t.Skip("-short: the core dump test starts a server and dumps it")
	}
	if os.Geteuid() != 0 {
		t.Skip("gcore can dump the hardened (non-dumpable) server as root only")
	}

	// A production deployment: init with a master key file and the root user's API key. The
	// server runs as an unprivileged user (nobody), as it would in production, from a copy of
	// this binary in a directory that user owns.
	base := t.TempDir()
	for _, d := range []string{base, filepath.Dir(base)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(base, "latchkey")
	if self, err := os.ReadFile(os.Args[0]); err != nil || os.WriteFile(bin, self, 0o755) != nil {
		t.Fatalf("copying the test binary: %v", err)
	}
	dir, mk := filepath.Join(base, "data"), filepath.Join(base, "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	mkFile, err := os.ReadFile(mk)
	if err != nil {
		t.Fatal(err)
	}
	masterHex := strings.TrimSpace(string(mkFile))
	master, _ := hex.DecodeString(masterHex)
	apiPriv, apiPub, _ := stamp.GenerateKey(stamp.CurveP256)
	var initOut bytes.Buffer
	if err := run(context.Background(), []string{"init", "--org-name", "Acme", "--user-name", "ops", "--api-public-key", apiPub,
		"--data-dir", dir, "--master-key-file", mk}, &initOut, io.Discard); err != nil {
		t.Fatal(err)
	}
	var created server.Created
	if err := json.Unmarshal(initOut.Bytes(), &created); err != nil {
		t.Fatalf("init printed %q: %v", initOut.String(), err)
	}
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	if err := filepath.WalkDir(base, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(nobody.Uid), int(nobody.Gid))
	}); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := exec.Command(
		bin,
		"serve",
		"--data-dir",
		dir,
		"--master-key-file",
		mk,
		"--api-addr",
		addr,
		"--proxy-addr",
		"",
		"--dashboard-addr",
		"",
	)
	srv.Env = append(os.Environ(), "LATCHKEY_TEST_AS_MAIN=1")
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	var logs syncBuffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	waitFor(
		t,
		func() bool { return strings.Contains(logs.String(), "latchkey api listening") },
		"serve to listen:\n"+logs.String(),
	)
	if strings.Contains(logs.String(), "not fully protected") || strings.Contains(logs.String(), "non-dumpable") {
		t.Fatalf("serve could not protect its memory:\n%s", logs.String())
	}

	// The hardened server cannot be dumped by its own user, while a process of that user that
	// did not harden itself can (the control: the refusal is PR_SET_DUMPABLE's, not gdb's).
	control := exec.Command("sleep", "60")
	control.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	if err := control.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = control.Process.Kill(); _ = control.Wait() }()
	if core, err := dumpCore(gcore, filepath.Join(base, "control"), control.Process.Pid, nobody); err != nil {
		t.Fatalf("gcore as nobody could not dump a dumpable process of nobody's: %v", err)
	} else {
		_ = os.Remove(core)
	}
	if core, err := dumpCore(gcore, filepath.Join(base, "refused"), srv.Process.Pid, nobody); err == nil {
		_ = os.Remove(core)
		t.Fatal("gcore as the server's own user dumped the hardened server")
	}

	c := &dumpClient{t: t, url: "http://" + addr, org: created.OrganizationID}
	if c.stamper, err = stamp.NewP256Stamper(apiPriv); err != nil {
		t.Fatal(err)
	}
	var keys server.PublicKeys
	c.get("/.well-known/latchkey.json", &keys)

	accounts := []map[string]string{
		{
			"curve":         "CURVE_SECP256K1",
			"pathFormat":    "PATH_FORMAT_BIP32",
			"path":          "m/44'/60'/0'/0/0",
			"addressFormat": "ADDRESS_FORMAT_ETHEREUM",
		},
		{
			"curve":         "CURVE_ED25519",
			"pathFormat":    "PATH_FORMAT_BIP32",
			"path":          "m/44'/501'/0'/0'",
			"addressFormat": "ADDRESS_FORMAT_SOLANA",
		},
	}
	type wallet struct {
		id        string
		addresses []string
		mnemonic  string
	}
	var wallets []*wallet
	for i, words := range []int{12, 24} {
		var r struct {
			Activity struct {
				Result struct {
					CreateWalletResult struct {
						WalletID  string   `json:"walletId"`
						Addresses []string `json:"addresses"`
					} `json:"createWalletResult"`
				} `json:"result"`
			} `json:"activity"`
		}
		c.submit(
			"create_wallet",
			"ACTIVITY_TYPE_CREATE_WALLET",
			map[string]any{"walletName": "w" + strconv.Itoa(i), "accounts": accounts, "mnemonicLength": words},
			&r,
		)
		wallets = append(
			wallets,
			&wallet{
				id:        r.Activity.Result.CreateWalletResult.WalletID,
				addresses: r.Activity.Result.CreateWalletResult.Addresses,
			},
		)
	}
	// An imported wallet: the mnemonic is made here, encrypted to the server's import target.
	imported, err := hd.NewMnemonic(12)
	if err != nil {
		t.Fatal(err)
	}
	{
		var ib struct {
			Activity struct {
				Result struct {
					InitImportWalletResult struct {
						ImportBundle string `json:"importBundle"`
					} `json:"initImportWalletResult"`
				} `json:"result"`
			} `json:"activity"`
		}
		c.submit(
			"init_import_wallet",
			"ACTIVITY_TYPE_INIT_IMPORT_WALLET",
			map[string]any{"userId": created.UserID},
			&ib,
		)
		enc, err := custody.SealToImportBundle(
			ib.Activity.Result.InitImportWalletResult.ImportBundle,
			[]byte(imported),
			created.OrganizationID,
			created.UserID,
			keys.SignerPublicKey,
		)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Activity struct {
				Result struct {
					ImportWalletResult struct {
						WalletID  string   `json:"walletId"`
						Addresses []string `json:"addresses"`
					} `json:"importWalletResult"`
				} `json:"result"`
			} `json:"activity"`
		}
		c.submit(
			"import_wallet",
			"ACTIVITY_TYPE_IMPORT_WALLET",
			map[string]any{
				"userId":          created.UserID,
				"walletName":      "imported",
				"encryptedBundle": enc,
				"accounts":        accounts,
			},
			&r,
		)
		wallets = append(
			wallets,
			&wallet{
				id:        r.Activity.Result.ImportWalletResult.WalletID,
				addresses: r.Activity.Result.ImportWalletResult.Addresses,
				mnemonic:  imported,
			},
		)
	}
	// A standalone private key.
	var pk struct {
		Activity struct {
			Result struct {
				CreatePrivateKeysResultV2 struct {
					PrivateKeys []struct {
						PrivateKeyID string `json:"privateKeyId"`
					} `json:"privateKeys"`
				} `json:"createPrivateKeysResultV2"`
			} `json:"result"`
		} `json:"activity"`
	}
	c.submit("create_private_keys", "ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2", map[string]any{"privateKeys": []any{
		map[string]any{
			"privateKeyName": "hot",
			"curve":          "CURVE_SECP256K1",
			"privateKeyTags": []string{},
			"addressFormats": []string{"ADDRESS_FORMAT_ETHEREUM"},
		}}}, &pk)
	keyID := pk.Activity.Result.CreatePrivateKeysResultV2.PrivateKeys[0].PrivateKeyID

	// Sign with every account and the key.
	digest := sha256.Sum256([]byte("a transaction"))
	for _, w := range wallets {
		if len(w.addresses) != 2 {
			t.Fatalf("wallet %s has addresses %v", w.id, w.addresses)
		}
		c.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": w.addresses[0],
			"payload": hex.EncodeToString(
				digest[:],
			), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}, nil)
		c.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": w.addresses[1],
			"payload": hex.EncodeToString(
				[]byte("a solana message"),
			), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NOT_APPLICABLE"}, nil)
	}
	c.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": keyID,
		"payload": hex.EncodeToString(
			digest[:],
		), "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"}, nil)

	// Exports to a client key: the first wallet and the key before the dump, the other wallet
	// after it (only to learn its mnemonic).
	recvPriv, recvPub, _ := stamp.GenerateKey(stamp.CurveP256)
	exportWallet := func(w *wallet) {
		var r struct {
			Activity struct {
				Result struct {
					ExportWalletResult struct {
						ExportBundle string `json:"exportBundle"`
					} `json:"exportWalletResult"`
				} `json:"result"`
			} `json:"activity"`
		}
		c.submit(
			"export_wallet",
			"ACTIVITY_TYPE_EXPORT_WALLET",
			map[string]any{"walletId": w.id, "targetPublicKey": recvPub},
			&r,
		)
		m, err := custody.OpenExportBundle(
			r.Activity.Result.ExportWalletResult.ExportBundle,
			recvPriv,
			created.OrganizationID,
			keys.SignerPublicKey,
		)
		if err != nil {
			t.Fatal(err)
		}
		w.mnemonic = string(m)
	}
	exportWallet(wallets[0])
	var ek struct {
		Activity struct {
			Result struct {
				ExportPrivateKeyResult struct {
					ExportBundle string `json:"exportBundle"`
				} `json:"exportPrivateKeyResult"`
			} `json:"result"`
		} `json:"activity"`
	}
	c.submit(
		"export_private_key",
		"ACTIVITY_TYPE_EXPORT_PRIVATE_KEY",
		map[string]any{"privateKeyId": keyID, "targetPublicKey": recvPub},
		&ek,
	)
	standalone, err := custody.OpenExportBundle(
		ek.Activity.Result.ExportPrivateKeyResult.ExportBundle,
		recvPriv,
		created.OrganizationID,
		keys.SignerPublicKey,
	)
	if err != nil || len(standalone) != 32 {
		t.Fatalf("export_private_key: %d bytes, %v", len(standalone), err)
	}

	// Root can (CAP_SYS_PTRACE): the dump searched below.
	core, err := dumpCore(gcore, filepath.Join(t.TempDir(), "core"), srv.Process.Pid, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(core)
	exportWallet(wallets[1])

	// What must not be in the dump.
	type secret struct {
		what  string
		bytes []byte
	}
	// The master key, followed by the next 16 bytes of its AES-256 key schedule, is what
	// crypto/aes keeps of it in the cipher the keyring builds to open its record (zeroed after
	// use: custody's masterAEAD): counted apart, so a failure says which copy it is.
	schedule := append(append([]byte{}, master...), aes256RoundKey2(master)...)
	secrets := []secret{
		{"the master key outside an AES key schedule", master},
		{"the master key's AES-256 key schedule", schedule},
		{"the master key's hex (the file's text)", []byte(masterHex)},
		{"the standalone private key", standalone},
	}
	for i, w := range wallets {
		name := fmt.Sprintf("wallet %d (%d words", i, len(strings.Fields(w.mnemonic)))
		if w.mnemonic == imported {
			name += ", imported"
		}
		name += ")"
		secrets = append(secrets, secret{name + ": the mnemonic", []byte(w.mnemonic)})
		for _, pad := range []byte{0x36, 0x5c} {
			if len(w.mnemonic) <= sha512.BlockSize {
				x := []byte(w.mnemonic)
				for j := range x {
					x[j] ^= pad
				}
				secrets = append(
					secrets,
					secret{fmt.Sprintf("%s: the mnemonic XOR 0x%x (an HMAC-SHA512 keyed by it)", name, pad), x},
				)
			}
		}
		seed, err := hd.MnemonicToSeed(w.mnemonic, "")
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, secret{name + ": the BIP-39 seed", seed})
		for _, m := range []struct{ what, key string }{{"BIP-32 secp256k1", "Bitcoin seed"}, {"SLIP-10 Ed25519", "ed25519 seed"}} {
			mac := hmac.New(sha512.New, []byte(m.key))
			mac.Write(seed)
			secrets = append(secrets, secret{name + ": the " + m.what + " master private key", mac.Sum(nil)[:32]})
		}
		for j, a := range accounts {
			k, err := hd.DeriveKeyFromPath(hd.Curve(a["curve"]), seed, a["path"])
			if err != nil {
				t.Fatal(err)
			}
			secrets = append(secrets, secret{fmt.Sprintf("%s: account %d's private key", name, j), k.PrivateKey()})
		}
	}
	needles := make([][]byte, len(secrets))
	for i, s := range secrets {
		needles[i] = s.bytes
	}
	counts, size := countInFile(t, core, needles)
	counts[0] -= counts[1]
	found := 0
	for i, s := range secrets {
		if counts[i] > 0 {
			found++
			t.Errorf("the core dump holds %s %d times", s.what, counts[i])
		} else {
			t.Logf("not in the core dump: %s", s.what)
		}
	}
	t.Logf("searched a %d MB core dump for %d secrets: %d found", size>>20, len(secrets), found)
}

// aes256RoundKey2 returns words 8 to 11 of the AES-256 key expansion of key (FIPS 197 §5.2): in
// memory, the 16 bytes that follow the key in an expanded encryption key.
func aes256RoundKey2(key []byte) []byte {
	// The S-box, from the multiplicative inverse in GF(2^8) and the affine map (FIPS 197 §5.1.1).
	var sbox [256]byte
	rotl := func(x byte, n uint) byte { return x<<n | x>>(8-n) }
	p, q := byte(1), byte(1)
	for {
		p ^= p<<1 ^ (p>>7)*0x1b // p *= 3
		q ^= q << 1             // q /= 3
		q ^= q << 2
		q ^= q << 4
		if q&0x80 != 0 {
			q ^= 0x09
		}
		sbox[p] = q ^ rotl(q, 1) ^ rotl(q, 2) ^ rotl(q, 3) ^ rotl(q, 4) ^ 0x63
		if p == 1 {
			break
		}
	}
	sbox[0] = 0x63
	w := make([]byte, 16)
	last := key[28:32]
	// w8 = w0 ^ SubWord(RotWord(w7)) ^ Rcon[1]; w9..w11 = w(i-8) ^ w(i-1).
	t := []byte{sbox[last[1]] ^ 0x01, sbox[last[2]], sbox[last[3]], sbox[last[0]]}
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			w[4*i+j] = key[4*i+j] ^ t[j]
		}
		t = w[4*i : 4*i+4]
	}
	return w
}

// dumpCore runs gcore on pid (as cred's user, or as this process's when nil) and returns the
// dump's path.
func dumpCore(gcore, prefix string, pid int, cred *syscall.Credential) (string, error) {
	cmd := exec.Command(gcore, "-o", prefix, strconv.Itoa(pid))
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("gcore: %v\n%s", err, out)
	}
	path := prefix + "." + strconv.Itoa(pid)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("gcore wrote no dump: %v\n%s", err, out)
	}
	return path, nil
}

// countInFile counts each needle's occurrences in a file too large to read at once, in chunks
// that overlap by the longest needle.
func countInFile(t *testing.T, path string, needles [][]byte) (counts []int, size int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	longest := 0
	for _, n := range needles {
		longest = max(longest, len(n))
	}
	counts = make([]int, len(needles))
	buf := make([]byte, 64<<20)
	kept := 0 // bytes carried over from the previous chunk (shorter than any match start)
	for {
		n, err := io.ReadFull(f, buf[kept:])
		size += int64(n)
		end := kept + n
		for i, needle := range needles {
			counts[i] += bytes.Count(buf[:end], needle)
		}
		if err != nil {
			break
		}
		// Keep the last longest-1 bytes, where a match straddling the boundary starts; matches
		// wholly inside them were counted already and will be again, so take them off now.
		kept = min(longest-1, end)
		copy(buf, buf[end-kept:end])
		for i, needle := range needles {
			counts[i] -= bytes.Count(buf[:kept], needle)
		}
	}
	return counts, size
}

// dumpClient sends stamped requests to the server under test.
type dumpClient struct {
	t       *testing.T
	url     string
	org     string
	stamper stamp.Stamper
}

func (c *dumpClient) get(path string, out any) {
	c.t.Helper()
	resp, err := http.Get(c.url + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
}

// submit posts an activity and decodes the completed result into out (when not nil).
func (c *dumpClient) submit(op, typ string, params, out any) {
	c.t.Helper()
	p, _ := json.Marshal(params)
	body := []byte(
		fmt.Sprintf(
			`{"type":%q,"organizationId":%q,"timestampMs":"%d","parameters":%s}`,
			typ,
			c.org,
			time.Now().UnixMilli(),
			p,
		),
	)
	name, value, err := c.stamper.Stamp(body)
	if err != nil {
		c.t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, c.url+"/public/v1/submit/"+op, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(name, value)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var st struct {
		Activity struct {
			Status string `json:"status"`
		} `json:"activity"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &st) != nil ||
		st.Activity.Status != "ACTIVITY_STATUS_COMPLETED" {
		c.t.Fatalf("%s: HTTP %d %s", op, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.t.Fatal(err)
		}
	}
}

// aes256RoundKey2 against the AES-256 key expansion example of FIPS 197 (Appendix A.3).
func TestAES256RoundKey2(t *testing.T) {
	key, _ := hex.DecodeString("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
	if got := hex.EncodeToString(aes256RoundKey2(key)); got != "9ba354118e6925afa51a8b5f2067fcde" {
		t.Fatalf("w8..w11 = %s", got)
	}
}
