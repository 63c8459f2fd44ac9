//go:build !amd64

package vm

// HostTSCkHz is unknown on hosts without an x86 TSC.
func HostTSCkHz() (int64, bool) { return 0, false }
