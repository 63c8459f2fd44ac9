package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"lab/internal/exitcode"
)

// A host (or a node image) with QEMU for one arch only: lab host says which
// arch has none and which package brings it, and --kvm of that arch fails
// with the same reason.
func TestHostWithoutQEMUForAnArch(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "qemu-system-x86_64"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string // in stdout, or stderr when code is not 0
		not  string // not in stdout
	}{
		{"listing", []string{"host"}, int(exitcode.OK),
			"arm64 guests: none (qemu-system-aarch64 is not on the PATH: install Debian's qemu-system-arm)", "x86_64 guests: none"},
		{"--kvm", []string{"host", "--kvm", "arm64"}, int(exitcode.Failed),
			"arm64 guests: qemu-system-aarch64 is not on the PATH: install Debian's qemu-system-arm", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := labCmd(t, tc.args...)
			got := stdout
			if tc.code != 0 {
				got = stderr
			}
			if code != tc.code || !strings.Contains(got, tc.want) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s\nwant %q", code, tc.code, stdout, stderr, tc.want)
			}
			if tc.not != "" && strings.Contains(stdout, tc.not) {
				t.Errorf("stdout has %q:\n%s", tc.not, stdout)
			}
		})
	}
}
