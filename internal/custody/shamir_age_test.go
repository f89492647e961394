package custody

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// decryptShares reads what WriteEncrypted wrote, share i with ids[i] (tests of the commands).
func decryptShares(t *testing.T, out string, ids []*age.X25519Identity) []string {
	t.Helper()
	var got []string
	blocks := strings.Split(out, "-----BEGIN AGE ENCRYPTED FILE-----")
	for i, id := range ids {
		block, _, _ := strings.Cut(blocks[i+1], "-----END AGE ENCRYPTED FILE-----")
		r, err := age.Decrypt(
			armor.NewReader(
				strings.NewReader("-----BEGIN AGE ENCRYPTED FILE-----"+block+"-----END AGE ENCRYPTED FILE-----\n"),
			),
			id,
		)
		if err != nil {
			t.Fatalf("share %d: %v", i+1, err)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("share %d: %v", i+1, err)
		}
		got = append(got, strings.TrimSpace(string(b)))
	}
	return got
}

func TestShareRecipients(t *testing.T) {
	var ids []*age.X25519Identity
	var list []string
	for range 3 {
		id, _ := age.GenerateX25519Identity()
		ids, list = append(ids, id), append(list, id.Recipient().String())
	}
	to, err := ParseShareRecipients(list, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := NewMasterKey()
	_, shares, _ := SplitMasterKey(m, 3, 2)
	var out bytes.Buffer
	if err := shares.WriteEncrypted(&out, to); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if strings.Contains(out.String(), string(shares.Text(i))) {
			t.Fatal("a plaintext share in the encrypted output")
		}
	}
	if !strings.Contains(
		out.String(),
		"Unseal share 2 of 3 (any 2 unseal), encrypted to "+list[1]+":\n-----BEGIN AGE ENCRYPTED FILE-----",
	) {
		t.Fatalf("output:\n%s", out.String())
	}
	got := decryptShares(t, out.String(), ids)
	for i := range 3 {
		if got[i] != string(shares.Text(i)) {
			t.Fatalf("share %d does not decrypt to itself: %q %q", i+1, got[i], shares.Text(i))
		}
	}
	// Another holder's identity does not open a share.
	first := out.String()[strings.Index(out.String(), "-----BEGIN"):]
	first = first[:strings.Index(first, "-----END AGE ENCRYPTED FILE-----")] + "-----END AGE ENCRYPTED FILE-----\n"
	if _, err := age.Decrypt(armor.NewReader(strings.NewReader(first)), ids[1]); err == nil ||
		!strings.Contains(err.Error(), "did not match") {
		t.Fatalf("share 1 with holder 2's identity: %v", err)
	}
	for _, c := range []struct {
		list []string
		want string
	}{
		{list[:2], "give one age recipient per share: 2 for --key-shares 3"},
		{[]string{list[0], list[0], list[1]}, "recipient 2 is given twice"},
		{[]string{list[0], "age1nope", list[1]}, "recipient 2 is not an age X25519 recipient"},
	} {
		if _, err := ParseShareRecipients(c.list, 3); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.list, err, c.want)
		}
	}
}
