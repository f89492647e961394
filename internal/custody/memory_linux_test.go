//go:build linux

package custody

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags returns the VmFlags of the mapping of this process that holds addr (/proc/self/smaps).
func vmFlags(t *testing.T, addr uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			lo, hi, _ := strings.Cut(fields[0], "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= l && uint64(addr) < h
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

// A master key, however it is made, lives on a page that is locked in RAM ("lo") and left out
// of core dumps ("dd"), outside Go's heap.
func TestMasterKeyOnAProtectedPage(t *testing.T) {
	dir := t.TempDir()
	gen, err := GenerateMasterKeyFile(dir + "/mk")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadMasterKeyFile(dir + "/mk")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := NewMasterKey()
	if err != nil {
		t.Fatal(err)
	}
	if *gen.k != *loaded.k {
		t.Fatal("the loaded key differs")
	}
	for name, m := range map[string]*MasterKey{"generated": gen, "loaded": loaded, "new": fresh} {
		flags := strings.Join(vmFlags(t, uintptr(unsafe.Pointer(m.k))), " ")
		if !strings.Contains(" "+flags+" ", " dd ") {
			t.Errorf("%s: the page is not excluded from core dumps: VmFlags %s", name, flags)
		}
		if MemoryProtection() == nil && !strings.Contains(" "+flags+" ", " lo ") {
			t.Errorf("%s: the page is not locked: VmFlags %s", name, flags)
		}
	}
	if err := MemoryProtection(); err != nil {
		t.Logf("protection incomplete here: %v", err)
	}
}

// HardenProcess makes the process non-dumpable (checked in a child process, so the test binary
// itself stays dumpable).
func TestHardenProcess(t *testing.T) {
	if os.Getenv("LATCHKEY_HARDEN_CHILD") == "1" {
		before, _ := Dumpable()
		err := HardenProcess()
		after, _ := Dumpable()
		fmt.Printf("before=%v after=%v err=%v\n", before, after, err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHardenProcess$")
	cmd.Env = append(os.Environ(), "LATCHKEY_HARDEN_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(string(out), "before=true after=false err=<nil>") {
		t.Fatalf("child: %s", out)
	}
}
