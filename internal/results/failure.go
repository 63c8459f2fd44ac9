package results

import (
	"context"
	"errors"
)

// Kinds of failed boot, as results.json records them. A kernel failure says
// something about the kernel under test; an infrastructure failure says
// nothing about it, and a bisect must not count it as the kernel's. This
// package owns the names and which of them are the kernel's fault; package
// vm tags its errors with them.
const (
	FailPanic     = "kernel-panic"   // the kernel panicked
	FailHang      = "hang"           // no record before the deadline: hung, or too slow to be measured
	FailStopped   = "guest-stopped"  // the guest went away before the agent finished, no panic seen
	FailProblem   = "kernel-problem" // a WARNING, BUG, oops, RCU stall... on the console
	FailAgent     = "agent-error"    // the agent could not go on in this guest
	FailShape     = "wrong-shape"    // the guest kernel saw another machine than the one asked for
	FailExpect    = "console-expect" // a console line the lab requires never showed
	FailFlood     = "flood"          // the guest wrote more than lab reads (results port or console)
	FailInfra     = "infrastructure" // QEMU could not start or run, QMP, pinning, files: not the kernel's fault
	FailStarved   = "host-starved"   // the host left the vCPU unrun while the kernel calibrated a timer (arch.StarvedLines)
	FailInterrupt = "interrupted"    // the user stopped lab
	// FailUnknown is a failure recorded before kinds were (schema 0).
	FailUnknown = "unknown"
)

// KernelFault reports whether a failure kind is the kernel's fault.
func KernelFault(kind string) bool {
	switch kind {
	case FailPanic, FailHang, FailStopped, FailProblem, FailAgent, FailShape, FailExpect, FailFlood:
		return true
	}
	return false
}

// FailureKind classifies a boot's error: the kind an error names (vm's
// BootError names one of the kinds above), FailInterrupt for a cancelled
// context, FailInfra for the rest.
func FailureKind(err error) string {
	var k interface{ FailureKind() string }
	switch {
	case err == nil:
		return ""
	case errors.As(err, &k):
		return k.FailureKind()
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return FailInterrupt
	}
	return FailInfra
}

// Failure is a boot that did not deliver: its kind (FailPanic, FailHang,
// ..., FailInfra) and what happened.
type Failure struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// KernelFault reports whether the kernel under test caused the failure, as
// opposed to the host, QEMU or the user.
func (f *Failure) KernelFault() bool { return f != nil && KernelFault(f.Kind) }

// OK reports whether the boot delivered its results.
func (b Boot) OK() bool { return b.Failure == nil }

// Fail records err as the boot's failure.
func (b *Boot) Fail(err error) {
	b.Failure = &Failure{Kind: FailureKind(err), Message: err.Error()}
}
