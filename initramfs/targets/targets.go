// Package targets holds the user-space functions the uprobe benchmarks
// attach to. They are written in assembly so that their first instruction is
// exactly the one a benchmark is named after.
package targets

// Nop is "nop; ret": the uprobe-nop target.
func Nop()

// Target describes a probe target as it must look in the binary.
type Target struct {
	Symbol string // ELF symbol (Go assembly functions carry the .abi0 suffix)
	Want   []byte // the bytes the attach point must start with
	What   string // the instruction, for messages
}
