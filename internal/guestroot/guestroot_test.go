package guestroot

import (
	"slices"
	"testing"
)

// What apt-cache depends --recurse prints for an arm64 package: each
// package once, indented dependency lines and virtual packages left out.
func TestPackages(t *testing.T) {
	out := []byte(`stress-ng:arm64
  Depends: libapparmor1:arm64
  Depends: libc6:arm64
libapparmor1:arm64
  Depends: libc6:arm64
libc6:arm64
  Depends: libgcc-s1:arm64
libgcc-s1:arm64
<libdrm-common:arm64>
libdrm-common
libc6:arm64
`)
	want := []string{"libapparmor1:arm64", "libc6:arm64", "libdrm-common", "libgcc-s1:arm64", "stress-ng:arm64"}
	if got := packages(out); !slices.Equal(got, want) {
		t.Errorf("packages %q, want %q", got, want)
	}
}
