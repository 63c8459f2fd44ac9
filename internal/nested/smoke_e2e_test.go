package nested

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/results"
)

// SmokeVar turns on TestKVMSmoke: it boots a TCG guest that boots a KVM
// guest. 31 s once its kernels are cached, but its outer kernel is a cold
// build of its own (about 8 minutes here), which ./scripts/test's budget on
// a fresh machine has no room for (docs/testing.md). The README names it
// as the check before a release.
const SmokeVar = "LAB_E2E_KVM"

// TestKVMSmoke runs scripts/kvm-smoke (x86_64) and checks what a KVM user
// would see: lab host choosing KVM, nested, and a lab run whose boots ran
// under KVM and say they were nested.
func TestKVMSmoke(t *testing.T) {
	if os.Getenv(SmokeVar) == "" {
		t.Skipf("end-to-end with a kernel of its own (a cold build: about 8 minutes): set %s=1 to run scripts/kvm-smoke", SmokeVar)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "scripts", "kvm-smoke"), "-out", out)
	cmd.Dir = root
	log, err := cmd.CombinedOutput()
	os.WriteFile(filepath.Join(out, "kvm-smoke.log"), log, 0o644)
	if err != nil {
		t.Fatalf("scripts/kvm-smoke: %v\n%s", err, tailLines(string(log), 60))
	}
	host, err := os.ReadFile(filepath.Join(out, "lab-host.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(host), "x86_64 guests: KVM") || !strings.Contains(string(host), "nested") {
		t.Errorf("lab host in the outer guest:\n%s\nwant KVM for x86_64, nested", host)
	}
	path := newest(filepath.Join(out, "results"), "results.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var run results.Run
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	if len(run.Boots) == 0 {
		t.Fatal("the inner run has no boots")
	}
	for _, b := range run.Boots {
		if b.Accel.Name != results.KVM || !strings.Contains(b.Accel.Nested, "TCG") {
			t.Errorf("boot %d: accel %+v, want KVM nested in a TCG guest", b.Index, b.Accel)
		}
		if b.Outcome == nil || len(b.Results) == 0 {
			t.Errorf("boot %d measured nothing", b.Index)
		}
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
