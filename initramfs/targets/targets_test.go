package targets

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"lab/internal/benchmark"
)

// program.go must be what asm/*.S assemble to.
func TestProgramIsItsSource(t *testing.T) {
	for _, tool := range []string{"x86_64-linux-gnu-as", "aarch64-linux-gnu-as"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (binutils-aarch64-linux-gnu and binutils build lab's kernels)", tool)
		}
	}
	if out, err := exec.Command("go", "run", "gen.go", "-check").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// Each program is an ELF executable for its arch whose entry is _start and
// whose targets begin with the instruction they are named after, spelt out
// here independently of the per-arch tables.
func TestProgramTargets(t *testing.T) {
	want := map[string]map[string][]byte{
		"amd64": {"nop": {0x90, 0xc3}, "push": {0x55, 0x5d, 0xc3}, "ret": {0xc3}},
		"arm64": {
			"nop":  {0x1f, 0x20, 0x03, 0xd5, 0xc0, 0x03, 0x5f, 0xd6},
			"push": {0xfd, 0x7b, 0xbf, 0xa9, 0xfd, 0x03, 0x00, 0x91},
			"ret":  {0xc0, 0x03, 0x5f, 0xd6},
		},
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for goarch, fns := range want {
		t.Run(goarch, func(t *testing.T) {
			prog, err := Program(goarch)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "producer")
			if err := os.WriteFile(file, prog, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := elf.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Machine != machine[goarch] || f.Type != elf.ET_EXEC || f.Entry != base+codeFile {
				t.Errorf("machine %v, type %v, entry %#x", f.Machine, f.Type, f.Entry)
			}
			for name, b := range fns {
				loc, err := Locate(file, goarch, Target{Name: name, Want: b, What: name})
				if err != nil {
					t.Fatal(err)
				}
				if loc.Offset <= codeFile {
					t.Errorf("%s at file offset %#x", name, loc.Offset)
				}
			}
			if _, err := Locate(file, goarch, Target{Name: "nop", Want: []byte{0xcc}, What: "int3"}); err == nil || !strings.Contains(err.Error(), "refusing") {
				t.Errorf("want a refusal for the wrong instruction, got %v", err)
			}
			if _, err := Locate(file, goarch, Target{Name: "no-such"}); err == nil {
				t.Error("want an error for a missing target")
			}
		})
	}
	for _, name := range []string{"nop", "push", "ret"} {
		if _, ok := Lookup(name); !ok {
			t.Errorf("no %s target in the %s table", name, runtime.GOARCH)
		}
	}
	if _, err := Program("mips"); err == nil {
		t.Error("a program for mips")
	}
}

// The host's own program runs every loop of the benchmark table and counts
// in its page; the guest runs the same bytes.
func TestProgramRunsEveryLoop(t *testing.T) {
	file := hostProgram(t)
	seen := map[string]bool{}
	for _, b := range benchmark.All() {
		if seen[b.Loop] || b.Program != nil {
			continue // a workload runs a program, not a loop of this one
		}
		seen[b.Loop] = true
		t.Run(b.Loop, func(t *testing.T) {
			idx, ok := LoopIndex(b.Loop)
			if !ok {
				t.Fatalf("benchmark %s: the program has no %s loop", b.Name, b.Loop)
			}
			fd, err := unix.MemfdCreate("page", 0)
			if err != nil {
				t.Fatal(err)
			}
			page := os.NewFile(uintptr(fd), "page")
			defer page.Close()
			if err := page.Truncate(4096); err != nil {
				t.Fatal(err)
			}
			mem, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(mem)
			binary.LittleEndian.PutUint32(mem[8:], idx)
			cmd := exec.Command(file)
			cmd.ExtraFiles = []*os.File{page}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Kill()
			count := (*atomic.Uint64)(unsafe.Pointer(&mem[0]))
			deadline := time.Now().Add(10 * time.Second)
			for count.Load() < 64*1000 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := count.Load(); n < 64*1000 || (!benchmark.SyscallLoop(b.Loop) && n%64 != 0) {
				t.Fatalf("count %d after the wait", n)
			}
		})
	}
	if _, ok := LoopIndex("no-such"); ok {
		t.Error("an index for an unknown loop")
	}
}

// Without its page the program stops at once with status 1 rather than
// running uncounted.
func TestProgramWithoutItsPage(t *testing.T) {
	file := hostProgram(t)
	var ee *exec.ExitError
	if err := exec.Command(file).Run(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("want exit status 1, got %v", err)
	}
}

// hostProgram writes the program for the host's own arch, which runs here.
func hostProgram(t *testing.T) string {
	t.Helper()
	prog, err := Program(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	file := filepath.Join(t.TempDir(), "producer")
	if err := os.WriteFile(file, prog, 0o755); err != nil {
		t.Fatal(err)
	}
	return file
}
