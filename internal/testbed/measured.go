package testbed

import (
	"reflect"

	"lab/internal/results"
)

// Measured are the boots of run that measured what a boot of kernel image
// with plan p would: under icount only, where an image's figures are exact
// (another session's wall-clock boots are not comparable with new ones),
// of the same image, arch, guest shape and job (the benchmarks in the same
// order: their order moves a figure by hundredths of a percent). A
// command that would boot such a kernel again takes these instead.
func Measured(run *results.Run, image string, p ShapePlan) []results.Boot {
	if run == nil || image == "" || p.Clock != results.ClockICount {
		return nil
	}
	var out []results.Boot
	for _, b := range run.Boots {
		if b.OK() && b.Clock == results.ClockICount && b.Arch == p.Arch.Name && b.Shape != nil &&
			b.Shape.String() == p.Shape.String() && reflect.DeepEqual(b.Job, p.Job) && run.ImageOf(b) == image {
			out = append(out, b)
		}
	}
	return out
}
