package main

import (
	"reflect"
	"strings"
	"testing"

	"lab/internal/results"
	"lab/internal/variant"
)

// Runs saved before rounds were recorded get them back from the boot
// order, per shape and variant.
func TestAssignRounds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		boots []results.Boot
		want  []int
	}{
		{"interleaved", []results.Boot{{Variant: variant.Baseline}, {Variant: variant.Patched}, {Variant: variant.Baseline}, {Variant: variant.Patched}}, []int{0, 0, 1, 1}},
		{"two shapes", []results.Boot{{CPUs: 1, Variant: variant.Baseline}, {CPUs: 1, Variant: variant.Patched}, {CPUs: 2, Variant: variant.Baseline}, {CPUs: 2, Variant: variant.Patched}}, []int{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &results.Run{Boots: tc.boots}
			assignRounds(r)
			var got []int
			for _, b := range r.Boots {
				got = append(got, b.Round)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rounds %v, want %v", got, tc.want)
			}
		})
	}
}

// On the committed icount example, the U test finds the series' four real
// changes at 4 boots per variant; the signed-rank test cannot below 6
// pairs.
func TestMeasureExample(t *testing.T) {
	var out strings.Builder
	if err := measureAll("../../results/examples/uprobe-srcu/x86_64-1cpu-icount/results.json", false, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"icount, 4 real of 4 rows: unpaired n=4, paired not within 5", "needs 6 pairs"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}
