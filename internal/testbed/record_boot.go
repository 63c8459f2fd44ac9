package testbed

import (
	"lab/internal/results"
)

// AddBoot puts a finished boot into run's record: failed with err when err
// is not nil (its kind read from the error: the kernel's fault or the
// infrastructure's), among the others in index order, whatever order boots
// side by side finished in. It is the one place a boot joins a record; the
// caller holds the lock that guards run, and saves it.
func AddBoot(run *results.Run, b results.Boot, err error) results.Boot {
	if err != nil {
		b.Fail(err)
	}
	run.Boots = append(run.Boots, b)
	run.SortBoots()
	return b
}
