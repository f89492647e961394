package notify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestOutboxRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	o, err := NewOutbox(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	ctx := context.Background()
	m := Message{To: "a@b.test", Subject: "s", Text: "t", HTML: "<p>h</p>", FromName: "N", ReplyTo: "r@b.test"}
	if err := o.SendEmail(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := o.SendSMS(ctx, SMS{To: "+1555", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := o.SendEmail(ctx, Message{To: "bad address", Text: "x"}); err == nil {
		t.Fatal("bad address accepted")
	}
	entries, err := ReadOutbox(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries", len(entries))
	}
	if entries[0].Kind != "email" || *entries[0].Email != m || entries[0].SMS != nil || entries[0].Time.IsZero() {
		t.Errorf("entry 0 = %+v", entries[0])
	}
	if entries[1].Kind != "sms" || entries[1].SMS.To != "+1555" || entries[1].SMS.Body != "b" {
		t.Errorf("entry 1 = %+v", entries[1])
	}
}

func TestOutboxConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	o, err := NewOutbox(path)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				body := fmt.Sprintf("w%d-%d %0500d", w, i, 0) // long lines to catch interleaving
				if err := o.SendSMS(context.Background(), SMS{To: "+1", Body: body}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	entries, err := ReadOutbox(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != workers*each {
		t.Fatalf("%d entries, want %d", len(entries), workers*each)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.SMS.Body] = true
	}
	if len(seen) != workers*each {
		t.Fatalf("%d distinct messages", len(seen))
	}
}

func TestOutboxBadPath(t *testing.T) {
	if _, err := NewOutbox(filepath.Join(t.TempDir(), "missing", "outbox.jsonl")); err == nil {
		t.Fatal("outbox in a missing directory accepted")
	}
}
