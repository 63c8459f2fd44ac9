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
	if testing.Short() {
		t.Skip("builds the agent for every arch")
	}
	// Spelt out here independently of the per-arch tables.
	want := map[string]map[string][]byte{
		"amd64": {"Nop": {0x90}, "Push": {0x55, 0x5d, 0xc3}, "Ret": {0xc3}},
		"arm64": {
			"Nop":  {0x1f, 0x20, 0x03, 0xd5, 0xc0, 0x03, 0x5f, 0xd6},
			"Push": {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91},
			"Ret":  {0xc0, 0x03, 0x5f, 0xd6},
		},
	}
	for goarch, fns := range want {
		t.Run(goarch, func(t *testing.T) {
			exe := buildAgent(t, goarch)
			var nop []byte
			for fn, bytes := range fns {
				loc, err := Locate(exe, Target{Symbol: "lab/initramfs/targets." + fn + ".abi0", Want: bytes, What: fn})
				if err != nil {
					t.Fatal(err)
				}
				if loc.Offset == 0 {
					t.Fatalf("%s: zero file offset", fn)
				}
			}
			nop = fns["Nop"][:1]
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

// The host's own table must agree with the bytes the test expects.
func TestHostTable(t *testing.T) {
	exe := buildAgentNative(t)
	for _, name := range []string{"nop", "push", "ret"} {
		tg, ok := Lookup(name)
		if !ok {
			t.Fatalf("no %s target", name)
		}
		if _, err := Locate(exe, tg); err != nil {
			t.Error(err)
		}
	}
}

func buildAgentNative(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "agent")
	if b, err := exec.Command("go", "build", "-o", out, "lab/initramfs/agent").CombinedOutput(); err != nil {
		t.Fatalf("build agent: %v\n%s", err, b)
	}
	return out
}
