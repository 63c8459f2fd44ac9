package spec

import (
	"fmt"
	"lab/internal/series"
	"strings"
)

// NameFor is the name of the lab made for series s (the results' folder): the
// series' name with anything a name cannot hold made a '-'.
func NameFor(s *series.Series) string {
	var b strings.Builder
	for _, r := range s.Name {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	if n := strings.TrimLeft(b.String(), ".-"); n != "" {
		return n
	}
	return "series"
}

// ShapeWords says which shape Default makes for the host.
func (h Host) ShapeWords() string {
	if h.KVMArch == "" {
		return fmt.Sprintf("no KVM here: x86_64 at 1 vCPU under QEMU's instruction counter, %d boots a variant", DefaultBootsICount)
	}
	return fmt.Sprintf("KVM: %s, the contention matrix up to %d vCPUs on the wall clock, %d boots a variant", h.KVMArch, h.CPUs, DefaultBootsWall)
}
