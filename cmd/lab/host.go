package main

import (
	"context"
	"flag"
	"fmt"
	"os/exec"
	"strings"

	"lab/internal/arch"
	"lab/internal/exitcode"
	"lab/internal/flagval"
	"lab/internal/results"
	"lab/internal/testbed"
	"lab/internal/vm"
)

// hostCommand says what this host can run: per arch, the accelerator lab
// would use and why. With --kvm ARCH it exits 0 only when KVM can run that
// arch's guests (scripts/demo asks it).
func hostCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var kvm flagval.String
	fs.Var(&kvm, "kvm", "exit 0 only when KVM can run guests of this arch here")
	return func(ctx context.Context, inv invocation) error {
		if len(inv.args) != 0 {
			return usagef("host takes no arguments")
		}
		h := testbed.ReadHost("")
		if kvm.IsSet() {
			a, err := arch.Lookup(kvm.V)
			if err != nil {
				return usageError{err.Error()}
			}
			if why := noQEMU(a); why != "" {
				return fmt.Errorf("%s guests: %s", a.Name, why)
			}
			accel, err := vm.ChooseAccel(h.VM, a)
			if err != nil {
				return err
			}
			fmt.Fprintf(inv.out, "%s: %s (%s)\n", a.Name, strings.ToUpper(accel.Name), accel.Reason)
			if accel.Name != results.KVM {
				return codeError{exitcode.Failed, fmt.Errorf("no KVM for %s guests here", a.Name)}
			}
			return nil
		}
		line := fmt.Sprintf("host: %d CPUs, %d NUMA node(s)", h.CPUs, len(h.Topology.Nodes))
		if h.TSCkHz > 0 { // x86 only: an arm64 host has no TSC
			line += fmt.Sprintf(", TSC %d kHz", h.TSCkHz)
		}
		fmt.Fprintln(inv.out, line)
		for _, name := range arch.Names() {
			a, _ := arch.Lookup(name)
			if why := noQEMU(a); why != "" {
				fmt.Fprintf(inv.out, "%s guests: none (%s)\n", name, why)
				continue
			}
			accel, err := vm.ChooseAccel(h.VM, a)
			if err != nil {
				return err
			}
			fmt.Fprintf(inv.out, "%s guests: %s (%s)\n", name, strings.ToUpper(accel.Name), accel.Reason)
			for _, m := range a.Machines {
				switch f := h.VM.FirmwarePath(a, m); {
				case f != "":
					fmt.Fprintf(inv.out, "  %s firmware: %s\n", m.Name(), f)
				case m.Firmware != "":
					fmt.Fprintf(inv.out, "  %s firmware: QEMU's default (%s has no %s: boots are slower)\n", m.Name(), a.QEMU, m.Firmware)
				}
			}
		}
		return nil
	}
}

// noQEMU says why a's guests cannot boot here for want of QEMU ("" when
// its QEMU is on the PATH): a node image built without it should say so
// here, not at a run's first boot.
func noQEMU(a arch.Arch) string {
	if _, err := exec.LookPath(a.QEMU); err != nil {
		return fmt.Sprintf("%s is not on the PATH: install Debian's %s", a.QEMU, a.QEMUPackage)
	}
	return ""
}
