package vm

import (
	"io/fs"
	"os"
	"strings"
	"testing"

	"lab/internal/results"
)

func TestInVM(t *testing.T) {
	hyper := "processor\t: 0\nflags\t\t: fpu vme svm sse hypervisor\n"
	metal := "processor\t: 0\nflags\t\t: fpu vme svm sse\n"
	for _, tc := range []struct {
		name string
		host Host
		want string
	}{
		{"bare metal", Host{CPUInfo: metal, Clocksources: "tsc hpet acpi_pm"}, ""},
		// The outer guest of scripts/kvm-smoke: q35 under TCG, -cpu max.
		{"QEMU under TCG", Host{CPUInfo: hyper, DMIVendor: "QEMU", DMIProduct: "Standard PC (Q35 + ICH9, 2009)", Clocksources: "tsc hpet"}, "a QEMU guest under TCG (no kvm-clock)"},
		{"QEMU under KVM", Host{CPUInfo: hyper, DMIVendor: "QEMU", Clocksources: "kvm-clock tsc hpet"}, "a QEMU guest under KVM (kvm-clock)"},
		// This project's PVM host: no DMI table, kvm-clock offered.
		{"KVM without DMI", Host{CPUInfo: hyper, Clocksources: "tsc kvm-clock"}, "a KVM guest (kvm-clock)"},
		{"cloud VM", Host{CPUInfo: hyper, DMIVendor: "Amazon EC2", Clocksources: "kvm-clock tsc"}, "an Amazon EC2 instance"},
		{"Hyper-V", Host{CPUInfo: hyper, DMIVendor: "Microsoft Corporation", DMIProduct: "Virtual Machine"}, "a Hyper-V guest"},
		{"hypervisor flag only", Host{CPUInfo: hyper}, "a VM (the CPU's hypervisor flag)"},
		// arm64 booted with -kernel: a device tree, no DMI, no CPU flag.
		{"arm64 virt", Host{GOARCH: "arm64", DTCompatible: "linux,dummy-virt"}, "a QEMU guest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.host.InVM(); got != tc.want {
				t.Errorf("InVM() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestChooseAccelRecordsNesting(t *testing.T) {
	x86 := mustArch(t, "x86_64")
	svm := "processor\t: 0\nflags\t\t: fpu svm hypervisor\n"
	outer := Host{GOARCH: "amd64", CPUInfo: svm, DMIVendor: "QEMU", Clocksources: "tsc"}
	for _, tc := range []struct {
		name   string
		forced string
		want   string // Accel.Nested
	}{
		{"auto", "", "a QEMU guest under TCG (no kvm-clock)"},
		{"--accel kvm", results.KVM, "a QEMU guest under TCG (no kvm-clock)"},
		// Under TCG the host being a VM changes nothing: not recorded.
		{"--accel tcg", results.TCG, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := outer
			h.ForcedAccel = tc.forced
			got, err := ChooseAccel(h, x86)
			if err != nil {
				t.Fatal(err)
			}
			if got.Nested != tc.want {
				t.Errorf("Nested = %q, want %q", got.Nested, tc.want)
			}
			if tc.want != "" && (!strings.Contains(got.Reason, "nested") || !strings.Contains(got.Caveat(), tc.want)) {
				t.Errorf("reason %q, caveat %q: want both to say nested in %s", got.Reason, got.Caveat(), tc.want)
			}
			if tc.want == "" && got.Caveat() != "" {
				t.Errorf("caveat %q for a guest that is not nested", got.Caveat())
			}
		})
	}
	metal := Host{GOARCH: "amd64", CPUInfo: "flags\t\t: fpu svm\n"}
	if got, _ := ChooseAccel(metal, x86); got.Name != results.KVM || got.Nested != "" {
		t.Errorf("bare metal: %+v, want KVM, not nested", got)
	}
}

// A missing or closed /dev/kvm says what would make it usable.
func TestDevKVMProblem(t *testing.T) {
	x86 := mustArch(t, "x86_64")
	svm := "flags\t\t: fpu svm hypervisor\n"
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"missing on a VM", &fs.PathError{Op: "open", Path: "/dev/kvm", Err: fs.ErrNotExist},
			[]string{"there is none", "CONFIG_KVM", "not offered nested virtualisation"}},
		{"permission", &fs.PathError{Op: "open", Path: "/dev/kvm", Err: fs.ErrPermission}, []string{"kvm group"}},
		{"other", os.ErrInvalid, []string{"not usable", "invalid argument"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ChooseAccel(Host{GOARCH: "amd64", CPUInfo: svm, DevKVM: tc.err, ForcedAccel: results.KVM}, x86)
			if err == nil {
				t.Fatal("--accel kvm without /dev/kvm: no error")
			}
			for _, w := range append(tc.want, "--accel kvm", "x86_64") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
