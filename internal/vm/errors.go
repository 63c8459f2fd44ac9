package vm

import (
	"fmt"
	"strings"
)

// BootError is a boot that did not deliver its results, as the guest
// showed: mostly because of the kernel (or the guest it runs), except
// where the guest showed that the host starved it (results.KernelFault
// tells the kinds apart).
type BootError struct {
	Kind    string   // results.FailPanic, results.FailHang, ...: package results owns the kinds
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

// FailureKind is the kind results.json records for the failure
// (results.FailureKind reads it).
func (e *BootError) FailureKind() string { return e.Kind }
