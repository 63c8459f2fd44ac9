package initramfs

import (
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The host's own ls (Debian's coreutils) is a dynamically linked program
// of the host's arch: its closure is found on the host, refused for
// another machine, and a root that lacks its libraries names the one
// missing.
func TestProgramFiles(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the host's programs are amd64 here")
	}
	const ls = "/usr/bin/ls"
	bare := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bare, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(ls)
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "usr/bin/ls"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/usr/bin/ls", filepath.Join(bare, "usr/bin/dir")) // absolute: the root's, not the host's
	for _, tc := range []struct {
		name, root, program string
		machine             elf.Machine
		want, wantErr       string
	}{
		{name: "host", root: "/", program: ls, machine: elf.EM_X86_64, want: "lib/x86_64-linux-gnu/libc.so.6"},
		{name: "interpreter", root: "/", program: ls, machine: elf.EM_X86_64, want: "lib64/ld-linux-x86-64.so.2"},
		{name: "another machine", root: "/", program: ls, machine: elf.EM_AARCH64, wantErr: "built for EM_X86_64, the guest runs EM_AARCH64"},
		{name: "a library missing", root: bare, program: "/usr/bin/dir", machine: elf.EM_X86_64, wantErr: ".so.1: not in /lib/x86_64-linux-gnu, /usr/lib/x86_64-linux-gnu"},
		{name: "no such program", root: "/", program: "/usr/bin/lab-no-such", machine: elf.EM_X86_64, wantErr: "/usr/bin/lab-no-such"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := ProgramFiles(tc.root, "x86_64-linux-gnu", tc.machine, tc.program)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range files {
				fi, err := os.Lstat(f.Host)
				if err != nil || !fi.Mode().IsRegular() {
					t.Errorf("%s: host file %s is not a regular file (%v)", f.Guest, f.Host, err)
				}
				found = found || f.Guest == tc.want
			}
			if !found || files[0].Guest != strings.TrimPrefix(tc.program, "/") {
				t.Errorf("files %+v: want the program first and %s", files, tc.want)
			}
		})
	}
}
