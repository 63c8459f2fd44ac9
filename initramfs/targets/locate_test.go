package targets

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildAgent builds the guest agent as the initramfs carries it (not
// stripped), for goarch.
func buildAgent(t *testing.T, goarch string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "agent-"+goarch)
	cmd := exec.Command("go", "build", "-o", out, "lab/initramfs/agent")
	cmd.Env = append(os.Environ(), "GOARCH="+goarch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build agent for %s: %v\n%s", goarch, err, b)
	}
	return out
}

// The targets must begin with the instruction they are named after, in the
// binary that really goes into the guest, for every guest arch.
func TestAgentTargets(t *testing.T) {
	want := map[string][]byte{
		"amd64": {0x90},
		"arm64": {0x1f, 0x20, 0x03, 0xd5},
	}
	for goarch, nop := range want {
		t.Run(goarch, func(t *testing.T) {
			exe := buildAgent(t, goarch)
			loc, err := Locate(exe, Target{Symbol: "lab/initramfs/targets.Nop.abi0", Want: nop, What: "nop"})
			if err != nil {
				t.Fatal(err)
			}
			if loc.Offset == 0 {
				t.Fatal("zero file offset")
			}
			wrong := Target{Symbol: "lab/initramfs/targets.Nop.abi0", Want: []byte{0xcc}, What: "int3"}
			if _, err := Locate(exe, wrong); err == nil || !strings.Contains(err.Error(), "refusing") {
				t.Fatalf("want a refusal for the wrong instruction, got %v", err)
			}
			if _, err := Locate(exe, Target{Symbol: "no.such.symbol", Want: nop}); err == nil {
				t.Fatal("want an error for a missing symbol")
			}
		})
	}
}
