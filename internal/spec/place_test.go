package spec

import (
	"errors"
	"fmt"
	"testing"
)

// keyedErr is an error that names its lab file key, as source.Error does.
type keyedErr struct{ keys []string }

func (e keyedErr) Error() string    { return `source.base "v9" is not a commit` }
func (e keyedErr) LabKey() []string { return e.keys }

// TestPlace: a problem found after reading is put at its key's line, or at
// the deepest part of it the file gave, or at the file.
func TestPlace(t *testing.T) {
	lab, path, err := parse(t, "name: t\nseries: s1\nsource:\n  git: /src/linux\n  base: v9\n")
	if err != nil {
		t.Fatal(err)
	}
	const msg = `source.base "v9" is not a commit`
	for _, tc := range []struct {
		err  error
		want string
	}{
		{keyedErr{[]string{"source", "base"}}, path + ":5: " + msg},
		{keyedErr{[]string{"source", "tarball"}}, path + ":3: " + msg},
		{fmt.Errorf("wrapped: %w", keyedErr{[]string{"source", "git"}}), path + ":4: wrapped: " + msg},
		{errors.New("no key"), path + ": no key"},
	} {
		if got := lab.Place(tc.err); got == nil || got.Error() != tc.want {
			t.Errorf("Place(%v) = %v, want %q", tc.err, got, tc.want)
		}
	}
	if (&Lab{}).Place(nil) != nil {
		t.Error("Place(nil) is an error")
	}
}
