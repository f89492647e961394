package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestMeasureFsync(t *testing.T) {
	dir := t.TempDir()
	d, err := MeasureFsync(dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 {
		t.Fatalf("median %v, want a positive duration", d)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the probe left %d files behind", len(left))
	}
	if _, err := MeasureFsync(dir+"/missing", 1); err == nil {
		t.Fatal("a missing directory was not reported")
	}
	r := Result{P50ms: 0.5, FsyncP50: 100 * time.Microsecond, FsyncP50ms: 0.1}
	if s := r.String(); !strings.Contains(s, "fsync p50=0.100ms (one client's p50 above it: 0.400ms)") {
		t.Fatalf("String() = %q, want the fsync line", s)
	}
}
