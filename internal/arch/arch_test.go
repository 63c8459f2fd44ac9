package arch

import (
	"os"
	"path/filepath"
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
			a.QEMUPackage == "" || a.Console == "" || a.SyscallPrefix == "" || a.MaxCPUs < 1 || a.TCGBootPerCPU <= 0 || len(a.Machine) == 0 {
			t.Errorf("%s: incomplete entry %+v", name, a)
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
