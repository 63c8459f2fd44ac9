// Package targets is the producer the agent's benchmarks measure: a static
// program for each guest arch, a few dozen instructions with no runtime,
// that calls one loop as fast as it can and counts its calls in a page it
// shares with the agent. A Go producer shared its vCPU with the Go
// runtime's own wake-ups, whose number depends on the guest's random
// stream: two images with the same code gave uprobe figures 0.06 % apart
// under icount. The program's source is asm/*.S; program.go is generated.
package targets

//go:generate go run gen.go

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"

	"lab/internal/benchmark"
)

// loops are the loops the program runs, at the index the agent writes in
// the shared page's second word (the program's dispatch reads the same
// order).
var loops = []string{benchmark.LoopNop, benchmark.LoopPush, benchmark.LoopRet, benchmark.LoopGetpgid, benchmark.LoopFlock}

// LoopIndex is the number that selects loop in the shared page.
func LoopIndex(loop string) (uint32, bool) {
	for i, l := range loops {
		if l == loop {
			return uint32(i), true
		}
	}
	return 0, false
}

// program is one arch's assembled code and where its symbols are in it.
type program struct {
	code    []byte
	symbols map[string]uint64
}

// The program loads at base; its code follows the ELF and program headers.
const (
	base     = 0x400000
	codeFile = 64 + 2*56 // ELF header, PT_LOAD and PT_GNU_STACK
)

// Program returns the producer as an executable file for goarch.
func Program(goarch string) ([]byte, error) {
	p, ok := programs[goarch]
	if !ok {
		return nil, fmt.Errorf("no producer program for %s", goarch)
	}
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[goarch]
	size := uint64(codeFile + len(p.code))
	var b bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT),
		Entry: base + codeFile + p.symbols["_start"], Phoff: 64,
		Ehsize: 64, Phentsize: 56, Phnum: 2,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	load := elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X),
		Vaddr: base, Paddr: base, Filesz: size, Memsz: size, Align: 0x1000}
	stack := elf.Prog64{Type: uint32(elf.PT_GNU_STACK), Flags: uint32(elf.PF_R | elf.PF_W), Align: 16}
	for _, v := range []any{hdr, load, stack} {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			return nil, err
		}
	}
	b.Write(p.code)
	return b.Bytes(), nil
}

// Target is a function of the program a uprobe benchmark attaches to.
type Target struct {
	Name string // the loop's name: nop, push, ret
	Want []byte // the bytes it must start with
	What string // that instruction, for messages
}

// Lookup returns the target named name for the host's own arch.
func Lookup(name string) (Target, bool) {
	t, ok := table()[name]
	return t, ok
}

// Location is where a target sits in the program's file.
type Location struct {
	File   string
	Name   string
	Offset uint64 // file offset, what a uprobe attaches to
	Bytes  []byte // the bytes found there
}

func (l Location) String() string {
	return fmt.Sprintf("%s:%s+0 (file offset %#x, bytes % x)", l.File, l.Name, l.Offset, l.Bytes)
}

// Locate finds t in the program file written for goarch and checks that it
// starts with the instruction the benchmark is named after; a benchmark
// must not run on a target that does not.
func Locate(file, goarch string, t Target) (Location, error) {
	p, ok := programs[goarch]
	if !ok {
		return Location{}, fmt.Errorf("no producer program for %s", goarch)
	}
	sym, ok := p.symbols[t.Name]
	if !ok {
		return Location{}, fmt.Errorf("%s: no target %s", file, t.Name)
	}
	off := codeFile + sym
	raw, err := os.ReadFile(file)
	if err != nil {
		return Location{}, err
	}
	if off+uint64(len(t.Want)) > uint64(len(raw)) {
		return Location{}, fmt.Errorf("%s: %s at offset %#x is past the end of the file", file, t.Name, off)
	}
	got := raw[off : off+uint64(len(t.Want))]
	loc := Location{File: file, Name: t.Name, Offset: off, Bytes: append([]byte(nil), got...)}
	if !bytes.Equal(got, t.Want) {
		return loc, fmt.Errorf("%s: %s starts with % x, not % x (%s): refusing to measure the wrong instruction", file, t.Name, got, t.Want, t.What)
	}
	return loc, nil
}
