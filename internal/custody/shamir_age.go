package custody

import (
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// ShareRecipients are the age X25519 recipients (age1…) the shares of a new split are
// encrypted to, one per share in order, so each share is readable only by its holder's age
// identity (age -d -i key.txt share.age | latchkey unseal).
type ShareRecipients []*age.X25519Recipient

// ParseShareRecipients reads one age X25519 recipient per share; shares is --key-shares.
func ParseShareRecipients(list []string, shares int) (ShareRecipients, error) {
	if len(list) != shares {
		return nil, fmt.Errorf(
			"--share-recipients: give one age recipient per share: %d for --key-shares %d",
			len(list),
			shares,
		)
	}
	out := make(ShareRecipients, len(list))
	seen := map[string]bool{}
	for i, s := range list {
		r, err := age.ParseX25519Recipient(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf(
				"--share-recipients: recipient %d is not an age X25519 recipient (age1…): %v",
				i+1,
				err,
			)
		}
		if seen[r.String()] {
			return nil, fmt.Errorf(
				"--share-recipients: recipient %d is given twice: every share goes to a different holder",
				i+1,
			)
		}
		seen[r.String()] = true
		out[i] = r
	}
	return out, nil
}

// WriteEncrypted writes each share encrypted to its recipient, as an ASCII-armored age file
// after a line naming the share and the recipient. The plaintext shares are not written.
func (s *Shares) WriteEncrypted(w io.Writer, to ShareRecipients) error {
	if len(to) != len(s.text) {
		return fmt.Errorf("custody: %d recipients for %d shares", len(to), len(s.text))
	}
	for i, t := range s.text {
		if _, err := fmt.Fprintf(w, "Unseal share %d of %d (any %d unseal), encrypted to %s:\n", i+1, len(s.text), s.threshold, to[i]); err != nil {
			return err
		}
		aw := armor.NewWriter(w)
		ew, err := age.Encrypt(aw, to[i])
		if err != nil {
			return err
		}
		if _, err := ew.Write(t); err != nil {
			return err
		}
		if _, err := ew.Write([]byte{'\n'}); err != nil {
			return err
		}
		if err := ew.Close(); err != nil {
			return err
		}
		if err := aw.Close(); err != nil {
			return err
		}
		if _, err := fmt.Fprintln(w); err != nil {
			return err
		}
	}
	return nil
}
