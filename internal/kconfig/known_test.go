package kconfig

import (
	"path/filepath"
	"testing"
)

// Every option of lab's own fragments is on the list of known symbols: a
// run of lab's labs never reads the tarball to check its config.
func TestOwnFragmentsAreKnown(t *testing.T) {
	frags, err := filepath.Glob("../../kernel-config/*.config")
	if err != nil || len(frags) == 0 {
		t.Fatalf("no fragments: %v", err)
	}
	unlisted, err := Unlisted(frags)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range unlisted {
		t.Errorf("%s:%d: %s is not on lab's list of known symbols", o.File, o.Line, o.Name)
	}
}
