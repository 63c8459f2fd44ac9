package arch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every architecture is complete: a config fragment, a QEMU and its package,
// a console, a syscall prefix and a vCPU limit.
func TestTableIsComplete(t *testing.T) {
	for _, name := range Names() {
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if a.GOARCH == "" || a.MakeArch == "" || a.ImageTarget == "" || a.ImagePath == "" || a.QEMU == "" ||
			a.QEMUPackage == "" || a.Console == "" || a.SyscallPrefix == "" || a.MaxCPUs < 1 || a.TCGBootPerCPU <= 0 || a.CPU == "" || len(a.Machines) == 0 {
			t.Errorf("%s: incomplete entry %+v", name, a)
		}
		for _, m := range a.Machines {
			if m.Name() == "" || m.ResultsBus == "" || m.Transport == "" {
				t.Errorf("%s: machine %v has no -M or no bus for the results port", name, m.Args)
			}
		}
		if last := a.Machines[len(a.Machines)-1]; len(a.Machines) > 0 && (!last.NUMA || !last.ICount || !last.CalibratesTSC) {
			t.Errorf("%s: the last machine, %s, must suit every guest (NUMA, icount, TSC calibration)", name, last.Name())
		}
		if a.CrossCompile != "" && a.CrossPackage == "" {
			t.Errorf("%s: a cross-compiler without its Debian package", name)
		}
		if _, err := os.Stat(filepath.Join("..", "..", "kernel-config", name+".config")); err != nil {
			t.Errorf("%s: no config fragment: %v", name, err)
		}
		back, err := ForGOARCH(a.GOARCH)
		if err != nil || back.Name != name {
			t.Errorf("ForGOARCH(%s) = %s, %v", a.GOARCH, back.Name, err)
		}
	}
}

// Guests boot on the first machine that suits them: x86_64 guests on
// microvm unless they have NUMA nodes, run under icount or calibrate their
// TSC (then q35); arm64 guests always on virt.
func TestMachineFor(t *testing.T) {
	for _, tc := range []struct {
		arch  string
		needs Needs
		want  string
	}{
		{"x86_64", Needs{}, "microvm"},
		{"x86_64", Needs{NUMA: true}, "q35"},
		{"x86_64", Needs{ICount: true}, "q35"},
		{"x86_64", Needs{CalibratesTSC: true}, "q35"},
		{"x86_64", Needs{NUMA: true, ICount: true, CalibratesTSC: true}, "q35"},
		{"arm64", Needs{}, "virt"},
		{"arm64", Needs{NUMA: true, ICount: true, CalibratesTSC: true}, "virt"},
	} {
		a, err := Lookup(tc.arch)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.MachineFor(tc.needs).Name(); got != tc.want {
			t.Errorf("%s, %+v: %s, want %s", tc.arch, tc.needs, got, tc.want)
		}
	}
}

func TestLookupAliases(t *testing.T) {
	for in, want := range map[string]string{"amd64": "x86_64", "AArch64": "arm64", "x86_64": "x86_64"} {
		a, err := Lookup(in)
		if err != nil || a.Name != want {
			t.Errorf("Lookup(%q) = %q, %v", in, a.Name, err)
		}
	}
	if _, err := Lookup("riscv64"); err == nil {
		t.Error("riscv64: want an error until it has an entry")
	}
}

// TestInstallDepsCoversTheTable: scripts/install-deps is shell and cannot
// read the arch table, so it is checked against it: every arch's QEMU and
// cross-compiler package must be in its list.
func TestInstallDepsCoversTheTable(t *testing.T) {
	data, err := os.ReadFile("../../scripts/install-deps")
	if err != nil {
		t.Fatal(err)
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(string(data)) {
		words[strings.Trim(w, `"'`)] = true
	}
	for _, name := range Names() {
		a, _ := Lookup(name)
		for _, pkg := range []string{a.QEMUPackage, a.CrossPackage} {
			if pkg != "" && !words[pkg] {
				t.Errorf("%s needs the Debian package %s, which scripts/install-deps does not install", name, pkg)
			}
		}
	}
}

// Every arch names where its guest programs come from: a workload's
// program and libraries are found by these (initramfs.ProgramFiles,
// guestroot).
func TestGuestProgramFields(t *testing.T) {
	for _, name := range Names() {
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if a.Multiarch == "" || a.ELFMachine == 0 || a.DebianArch == "" {
			t.Errorf("%s: Multiarch %q, ELFMachine %v, DebianArch %q", name, a.Multiarch, a.ELFMachine, a.DebianArch)
		}
	}
}
