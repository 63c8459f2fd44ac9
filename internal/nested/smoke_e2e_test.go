package nested

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/internal/results"
	"lab/internal/testenv"
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

// TestKVMSmokeCheckFromAnyPath runs ./scripts/kvm-smoke -check, as a user
// would before the full smoke, from copies of this checkout at paths the
// outer guest's mounts hid (issue 42: under /tmp) or hide still and must
// mount again (under /dev/shm, below the guest's own /dev), one with a space
// and a comma. The check builds and boots no kernel: it checks what the
// outer guest would see, has QEMU open the outer line's shares paused, and
// as root rehearses the guest's mounts in a mount namespace of its own,
// where lab plan reads the inner lab's file as the inner run would. The
// full smoke (TestKVMSmoke) is not in the suite: its outer kernel is a cold
// build of its own.
func TestKVMSmokeCheckFromAnyPath(t *testing.T) {
	testenv.E2E(t, "scripts/kvm-smoke -check from checkouts under /tmp and /dev/shm")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := checkoutFiles(t, root)
	for _, tc := range []struct{ name, base, sub string }{
		{"under /tmp (issue 42)", "/tmp", "clone"},
		{"under /dev/shm, with a space and a comma", "/dev/shm", "kvm smoke, clone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if fi, err := os.Stat(tc.base); err != nil || !fi.IsDir() {
				t.Skipf("no %s here", tc.base)
			}
			dir, err := os.MkdirTemp(tc.base, "lab-kvm-check-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			checkout := filepath.Join(dir, tc.sub)
			copyFiles(t, root, checkout, files)
			start := time.Now()
			// A cache of its own, beside the checkout: the check writes
			// nothing there but a probe, and it is one more path to see.
			cmd := exec.Command(filepath.Join(checkout, "scripts", "kvm-smoke"), "-check", "-cache", filepath.Join(dir, "cache"))
			out, err := cmd.CombinedOutput()
			t.Logf("kvm-smoke -check from %q: %s", checkout, time.Since(start).Round(100*time.Millisecond))
			if err != nil {
				t.Fatalf("scripts/kvm-smoke -check from %q: %v\n%s", checkout, err, tailLines(string(out), 40))
			}
			want := []string{"QEMU takes the outer guest's line", "check passed"}
			if os.Geteuid() == 0 {
				want = append(want, "rehearsal of the outer guest's mounts on the host: ok")
			}
			for _, w := range want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, tailLines(string(out), 40))
				}
			}
			if os.Geteuid() != 0 {
				return
			}
			plans, _ := filepath.Glob(filepath.Join(checkout, "results", "kvm-smoke", "*", "rehearsal", "lab-plan.txt"))
			if len(plans) != 1 {
				t.Fatalf("rehearsal outputs %v, want one lab-plan.txt", plans)
			}
			if data, _ := os.ReadFile(plans[0]); !strings.Contains(string(data), "uprobe-srcu: 2 boots") {
				t.Errorf("lab plan in the rehearsal:\n%s", data)
			}
		})
	}
}

// checkoutFiles are the checkout's files, committed or not (but not
// ignored), relative to root: what a clone of this work tree would hold.
func checkoutFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	return strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
}

// copyFiles copies files (relative to from) to the folder to, with their
// modes (the scripts are executable).
func copyFiles(t *testing.T, from, to string, files []string) {
	t.Helper()
	for _, f := range files {
		src := filepath.Join(from, f)
		fi, err := os.Lstat(src)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(to, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, fi.Mode()&fs.ModePerm); err != nil {
			t.Fatal(err)
		}
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
