package testbed

import (
	"lab/internal/arch"
	"lab/internal/results"
	"lab/internal/vm"
	"runtime"
)

// KVMArch is the arch whose guests KVM runs here (this host's own), ""
// when none does or accel (--accel) forces TCG.
func KVMArch(accel string) string {
	a, err := arch.ForGOARCH(runtime.GOARCH)
	if err != nil {
		return ""
	}
	acc, err := vm.ChooseAccel(ReadHost(accel).VM, a)
	if err != nil || acc.Name != results.KVM {
		return ""
	}
	return a.Name
}
