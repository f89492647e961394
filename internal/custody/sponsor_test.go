package custody

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/store"
)

// The sponsor keys are made once and the same in every process, after a reload, and under a
// keyring opened again.
func TestSponsorKeysStableAcrossLoads(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	kr, err := OpenKeyring(ctx, st, testMaster(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	// Several processes starting at once agree on one pair.
	var wg sync.WaitGroup
	loaded := make([]*SponsorKeys, 4)
	errs := make([]error, 4)
	for i := range loaded {
		wg.Go(func() { loaded[i], errs[i] = LoadSponsorKeys(ctx, st, kr) })
	}
	wg.Wait()
	for i, s := range loaded {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if s.PaymasterAddress() != loaded[0].PaymasterAddress() ||
			s.FeePayerPublicKey() != loaded[0].FeePayerPublicKey() {
			t.Fatalf("process %d loaded other sponsor keys: %v vs %v", i, s, loaded[0])
		}
	}
	kr2, err := OpenKeyring(ctx, st, testMaster(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadSponsorKeys(ctx, st, kr2)
	if err != nil {
		t.Fatal(err)
	}
	if again.PaymasterAddress() != loaded[0].PaymasterAddress() ||
		again.FeePayerPublicKey() != loaded[0].FeePayerPublicKey() {
		t.Fatal("the sponsor keys changed after a reload")
	}
	if again.PaymasterAddress() == ([20]byte{}) || again.FeePayerPublicKey() == ([32]byte{}) {
		t.Fatal("empty sponsor key")
	}
	// They are not server keys: the server keys are other keys.
	sk, err := LoadServerKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range AllServerKeys {
		if name == sponsorPaymaster || name == sponsorFeePayer {
			t.Fatalf("%s is listed as a server key", name)
		}
		if strings.Contains(sk.PublicKey(name), hex.EncodeToString(again.PaymasterPublicKey()[1:])) {
			t.Fatalf("server key %s is the paymaster", name)
		}
	}
}

var secp256k1HalfN, _ = new(big.Int).SetString("7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0", 16)

// A paymaster signature recovers to the paymaster's address, with v in {0,1} and a low s; a fee
// payer signature verifies under its public key (and under no other message).
func TestSponsorKeysSign(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	kr, _ := OpenKeyring(ctx, st, testMaster(t, 1))
	s, err := LoadSponsorKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 64 {
		digest := crypto.Keccak256Hash([]byte{byte(i)})
		sig, err := s.SignPaymasterDigest(digest)
		if err != nil {
			t.Fatal(err)
		}
		if sig[64] > 1 {
			t.Fatalf("v = %d", sig[64])
		}
		if new(big.Int).SetBytes(sig[32:64]).Cmp(secp256k1HalfN) > 0 {
			t.Fatalf("high s: %x", sig[32:64])
		}
		pub, err := crypto.SigToPub(digest[:], sig[:])
		if err != nil {
			t.Fatal(err)
		}
		if crypto.PubkeyToAddress(*pub) != s.PaymasterAddress() {
			t.Fatalf(
				"signature %d recovers to %s, not the paymaster 0x%x",
				i,
				crypto.PubkeyToAddress(*pub),
				s.PaymasterAddress(),
			)
		}
		if !bytes.Equal(crypto.FromECDSAPub(pub), s.PaymasterPublicKey()) {
			t.Fatal("PaymasterPublicKey is not the signing key")
		}
	}
	a := s.Addresses()
	if pk := s.FeePayerPublicKey(); a.SolanaFeePayer != base58.Encode(pk[:]) ||
		a.EVMPaymaster != common.Address(s.PaymasterAddress()).Hex() {
		t.Fatalf("published addresses %+v", a)
	}
	for _, msg := range [][]byte{nil, []byte("a solana message"), bytes.Repeat([]byte{7}, 1232)} {
		sig, err := s.SignFeePayer(msg)
		if err != nil {
			t.Fatal(err)
		}
		pub := s.FeePayerPublicKey()
		if !ed25519.Verify(pub[:], msg, sig[:]) {
			t.Fatalf("fee payer signature over %d bytes does not verify", len(msg))
		}
		if ed25519.Verify(pub[:], append(msg, 0), sig[:]) {
			t.Fatal("fee payer signature verifies another message")
		}
	}
}

// The sponsor keys are server key records under their own seal binding: no organization owns
// them, no lookup key names them, a wallet or private key binding cannot open them, and a
// record whose published key was replaced is refused. Nothing secret appears in errors or in
// what a log would print.
func TestSponsorKeysNotReachable(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t)
	kr, _ := OpenKeyring(ctx, st, testMaster(t, 1))
	s, err := LoadSponsorKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	var pmRec store.Record
	for _, name := range []ServerKey{sponsorPaymaster, sponsorFeePayer} {
		rec, err := getServerKeyRecord(ctx, st, name)
		if err != nil {
			t.Fatal(err)
		}
		if rec.OrgID != "" {
			t.Fatalf("%s is owned by organization %q", name, rec.OrgID)
		}
		if name == sponsorPaymaster {
			pmRec = rec
		}
		var sr serverKeyRecord
		if err := json.Unmarshal(rec.Data, &sr); err != nil {
			t.Fatal(err)
		}
		raw, err := kr.Open(sr.Sealed, serverKeyBinding(name))
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, hex.EncodeToString(raw), fmt.Sprint(raw), string(raw),
			hex.EncodeToString(sr.Sealed), fmt.Sprint(sr.Sealed))
		// Wallet and private key seals bind an organization and their own kind: none opens it.
		for _, b := range []Binding{
			{Kind: "private_key", ID: string(name)},
			{OrgID: "org-1", Kind: "wallet", ID: string(name)},
			{Kind: "wallet_account", ID: string(name)},
		} {
			if _, err := kr.Open(sr.Sealed, b); err == nil {
				t.Fatalf("%s opens under %+v", name, b)
			}
		}
	}
	pm := s.PaymasterAddress()
	err = st.View(ctx, func(r store.Reader) error {
		for _, v := range []string{
			"0x" + hex.EncodeToString(pm[:]),
			hex.EncodeToString(pm[:]),
			hex.EncodeToString(s.PaymasterPublicKey()),
		} {
			for _, name := range []string{"wallet_account.address", "private_key.public_key", "private_key.address"} {
				refs, err := r.Lookup(ctx, name, v)
				if err != nil {
					return err
				}
				if len(refs) > 0 {
					t.Errorf("%s %s finds %v", name, v, refs)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// What a log or an error could show of the value.
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("gas station sponsor keys", "keys", s)
	shown := []string{fmt.Sprint(s), fmt.Sprintf("%+v", s), fmt.Sprintf("%#v", s), logged.String()}
	if !strings.Contains(logged.String(), s.Addresses().EVMPaymaster) {
		t.Fatalf("the log line lacks the paymaster address: %s", logged.String())
	}

	// A record whose public key was replaced (funds sent to another address) is refused, and so
	// is a keyring under another master key; neither error shows the key.
	var sr serverKeyRecord
	_ = json.Unmarshal(pmRec.Data, &sr)
	sr.PublicKey = "04" + strings.Repeat("11", 64)
	pmRec.Data, _ = json.Marshal(sr)
	pmRec.UpdatedAt = time.Now()
	if err := st.Update(ctx, func(tx store.Tx) error { return tx.Put(ctx, pmRec) }); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSponsorKeys(ctx, st, kr); err == nil {
		t.Fatal("a sponsor key record with another public key was loaded")
	} else {
		shown = append(shown, err.Error())
	}
	kr3, _ := OpenKeyring(ctx, openTestStore(t), testMaster(t, 2))
	s2 := *s
	s2.kr = kr3
	if _, err := s2.SignPaymasterDigest([32]byte{1}); err == nil {
		t.Fatal("signed under a keyring that does not hold the key")
	} else {
		shown = append(shown, err.Error())
	}
	if _, err := s2.SignFeePayer([]byte("m")); err == nil {
		t.Fatal("signed under a keyring that does not hold the key")
	} else {
		shown = append(shown, err.Error())
	}
	for _, out := range shown {
		for _, sec := range secrets {
			if strings.Contains(out, sec) {
				t.Fatalf("a secret shows in %q", out)
			}
		}
	}
}
