package targets

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
)

// Location is where a target sits in an executable file.
type Location struct {
	File   string
	Symbol string
	Offset uint64 // file offset, what a uprobe attaches to
	Bytes  []byte // the bytes found there
}

func (l Location) String() string {
	return fmt.Sprintf("%s:%s+0 (file offset %#x, bytes % x)", l.File, l.Symbol, l.Offset, l.Bytes)
}

// Locate finds t in the executable file exe and checks that it starts with
// the instruction the benchmark is named after; a benchmark must not run on
// a target that does not.
func Locate(exe string, t Target) (Location, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return Location{}, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return Location{}, fmt.Errorf("%s: symbols: %w (built stripped?)", exe, err)
	}
	var sym *elf.Symbol
	for i := range syms {
		if syms[i].Name == t.Symbol {
			sym = &syms[i]
			break
		}
	}
	if sym == nil {
		return Location{}, fmt.Errorf("%s: no symbol %s", exe, t.Symbol)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 {
			continue
		}
		if sym.Value < p.Vaddr || sym.Value >= p.Vaddr+p.Filesz {
			continue
		}
		off := sym.Value - p.Vaddr + p.Off
		raw, err := os.ReadFile(exe)
		if err != nil {
			return Location{}, err
		}
		if off+uint64(len(t.Want)) > uint64(len(raw)) {
			return Location{}, fmt.Errorf("%s: %s at offset %#x is past the end of the file", exe, t.Symbol, off)
		}
		got := raw[off : off+uint64(len(t.Want))]
		loc := Location{File: exe, Symbol: t.Symbol, Offset: off, Bytes: append([]byte(nil), got...)}
		if !bytes.Equal(got, t.Want) {
			return loc, fmt.Errorf("%s: %s starts with % x, not % x (%s): refusing to measure the wrong instruction", exe, t.Symbol, got, t.Want, t.What)
		}
		return loc, nil
	}
	return Location{}, fmt.Errorf("%s: %s (%#x) is in no executable segment", exe, t.Symbol, sym.Value)
}
