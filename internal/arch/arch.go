// Package arch describes the guest architectures lab can build and boot:
// how the kernel is built for them and how QEMU runs them.
package arch

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
)

// Arch is one guest architecture.
type Arch struct {
	Name          string   // lab's name: "x86_64", "arm64"
	GOARCH        string   // for the guest agent
	MakeArch      string   // ARCH= for kbuild
	CrossCompile  string   // CROSS_COMPILE= prefix; empty when building natively
	ImageTarget   string   // make target producing the boot image
	ImagePath     string   // image path relative to the O= build directory
	QEMU          string   // qemu-system binary
	Machine       []string // -M/-cpu arguments
	Console       string   // kernel console device
	KernelSymbols string   // prefix of syscall entry symbols, e.g. "__x64_sys_"
}

var all = map[string]Arch{
	"x86_64": {
		Name:          "x86_64",
		GOARCH:        "amd64",
		MakeArch:      "x86_64",
		ImageTarget:   "bzImage",
		ImagePath:     "arch/x86/boot/bzImage",
		QEMU:          "qemu-system-x86_64",
		Machine:       []string{"-M", "q35", "-cpu", "max"},
		Console:       "ttyS0",
		KernelSymbols: "__x64_sys_",
	},
	"arm64": {
		Name:         "arm64",
		GOARCH:       "arm64",
		MakeArch:     "arm64",
		CrossCompile: "aarch64-linux-gnu-",
		ImageTarget:  "Image",
		ImagePath:    "arch/arm64/boot/Image",
		QEMU:         "qemu-system-aarch64",
		// GICv3: the default GICv2 refuses more than 8 vCPUs.
		// pauth-impdef: QARMA pointer authentication is very slow under TCG.
		Machine:       []string{"-M", "virt,gic-version=3", "-cpu", "max,pauth-impdef=on"},
		Console:       "ttyAMA0",
		KernelSymbols: "__arm64_sys_",
	},
}

// aliases maps other common spellings to lab's names.
var aliases = map[string]string{"amd64": "x86_64", "x86-64": "x86_64", "aarch64": "arm64"}

// Lookup returns the architecture called name (or one of its aliases).
func Lookup(name string) (Arch, error) {
	if a, ok := aliases[strings.ToLower(name)]; ok {
		name = a
	}
	a, ok := all[strings.ToLower(name)]
	if !ok {
		return Arch{}, fmt.Errorf("unknown architecture %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return a, nil
}

// Names lists the supported architectures.
func Names() []string {
	var n []string
	for k := range all {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Native reports whether the guest architecture is the host's, so that KVM
// can run it and no cross-compiler is needed.
func (a Arch) Native() bool { return a.GOARCH == runtime.GOARCH }

// CC is the C compiler kbuild should use.
func (a Arch) CC() string {
	if a.Native() {
		return "gcc"
	}
	return a.CrossCompile + "gcc"
}

// MakeArgs are the ARCH/CROSS_COMPILE arguments for every make invocation.
func (a Arch) MakeArgs() []string {
	args := []string{"ARCH=" + a.MakeArch}
	if !a.Native() && a.CrossCompile != "" {
		args = append(args, "CROSS_COMPILE="+a.CrossCompile)
	}
	return args
}
