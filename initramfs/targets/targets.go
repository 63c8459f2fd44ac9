// Package targets holds the user-space functions the uprobe benchmarks
// attach to. They are written in assembly so that their first instruction is
// exactly the one a benchmark is named after, and they are leaves that never
// grow the stack: a uretprobe rewrites their return address, which Go's
// stack walking must never see.
package targets

// Nop starts with a nop: the uprobe-nop target.
func Nop()

// Push starts by pushing the frame pointer (x86_64 push %rbp; arm64
// stp x29, x30, [sp, #-16]!): the uprobe-push target.
func Push()

// Ret is a lone return: the uprobe-ret target.
func Ret()

// Target describes a probe target as it must look in the binary.
type Target struct {
	Symbol string // ELF symbol (Go assembly functions carry the .abi0 suffix)
	Want   []byte // the bytes the attach point must start with
	What   string // the instruction, for messages
	Call   func() // calls the target
}

const pkg = "lab/initramfs/targets."

// Lookup returns the target named name ("nop", "push", "ret").
func Lookup(name string) (Target, bool) {
	t, ok := table()[name]
	return t, ok
}
