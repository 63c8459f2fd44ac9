package version

import (
	"regexp"
	"testing"
)

// A test binary carries no VCS stamp: the version comes from the checkout.
func TestLabFromCheckout(t *testing.T) {
	v := Lab("../..")
	if !regexp.MustCompile(`^[0-9a-f]{7}(-dirty)?$`).MatchString(v) {
		t.Errorf("version %q", v)
	}
	if got := Lab(t.TempDir()); got != "unknown" {
		t.Errorf("outside a checkout: %q", got)
	}
}
