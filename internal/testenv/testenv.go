// Package testenv says which tests may run: plain `go test ./...` is the
// fast suite, and the tests that build and boot real kernels, or need
// Chromium, run when LAB_E2E=1 is set, as ./scripts/test does.
package testenv

import (
	"os"
	"testing"
)

// Var is the environment variable that turns the end-to-end tests on.
const Var = "LAB_E2E"

// Enabled reports whether the end-to-end tests run.
func Enabled() bool { return os.Getenv(Var) != "" }

// E2E skips t unless the end-to-end tests run.
func E2E(t testing.TB, what string) {
	t.Helper()
	if !Enabled() {
		t.Skipf("end-to-end (%s): set %s=1 to run it, as ./scripts/test does", what, Var)
	}
}
