package vm

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Kinds of failed boot. A kernel failure (BootError) says something about
// the kernel under test; an infrastructure failure (InfraError) says
// nothing about it, and a bisect must not count it as the kernel's.
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
	FailInterrupt = "interrupted"    // the user stopped lab
)

// BootError is a boot that did not deliver its results because of the
// kernel (or the guest it runs): the kernel under test is at fault.
type BootError struct {
	Kind    string   // FailPanic, FailHang, ...
	Reason  string   // what happened
	Console []string // the console's last lines
	Log     string   // the console log
}

func (e *BootError) Error() string {
	if len(e.Console) == 0 {
		return e.Reason
	}
	return fmt.Sprintf("%s; console (%s), last lines:\n    %s", e.Reason, e.Log, strings.Join(e.Console, "\n    "))
}

// InfraError is a boot that failed for reasons outside the kernel: QEMU did
// not start or died, QMP did not answer, a file could not be written.
type InfraError struct {
	Reason string
	Err    error
}

func (e *InfraError) Error() string {
	if e.Err == nil {
		return e.Reason
	}
	return fmt.Sprintf("%s: %v", e.Reason, e.Err)
}

func (e *InfraError) Unwrap() error { return e.Err }

func infra(reason string, err error) error { return &InfraError{Reason: reason, Err: err} }

// Kind classifies a boot's error: a BootError's kind, FailInterrupt for a
// cancelled context, FailInfra for the rest.
func Kind(err error) string {
	var be *BootError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &be):
		return be.Kind
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return FailInterrupt
	}
	return FailInfra
}

// KernelFault reports whether a failure kind is the kernel's fault.
func KernelFault(kind string) bool {
	switch kind {
	case FailPanic, FailHang, FailStopped, FailProblem, FailAgent, FailShape, FailExpect, FailFlood:
		return true
	}
	return false
}
