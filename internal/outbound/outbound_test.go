package outbound

import (
	"context"
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	ctx := context.Background()
	if err := Check(ctx, "smtp"); err != nil {
		t.Fatal(err)
	}
	in := Forbid(ctx)
	if err := Check(in, "smtp"); !errors.Is(err, ErrInTransaction) {
		t.Fatalf("inside: %v", err)
	}
	if err := Check(Allow(in), "smtp"); err != nil {
		t.Fatalf("allowed again: %v", err)
	}
}
