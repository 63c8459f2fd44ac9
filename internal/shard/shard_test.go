package shard

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"lab/internal/variant"
)

func TestOrder(t *testing.T) {
	var got []string
	for _, s := range Order([]int{2, 2}, variant.Both) {
		got = append(got, fmt.Sprintf("%d%d%c", s.Shape, s.Round, s.Variant[0]))
	}
	if strings.Join(got, " ") != "00b 00p 01b 01p 10b 10p 11b 11p" {
		t.Errorf("order %v", got)
	}
}

// Shards take boot pairs round-robin over all shapes: every shard boots
// both variants, and together they make the whole run, each boot once.
func TestShards(t *testing.T) {
	all := Order(Same(2, 3), variant.Both) // 2 shapes × 3 rounds × 2 variants
	seen := map[int]int{}
	for k := 0; k < 4; k++ {
		part := Shard{K: k, N: 4}.Pick(all)
		base, pat := 0, 0
		for _, s := range part {
			seen[s.Index]++
			if s.Variant == variant.Baseline {
				base++
			} else {
				pat++
			}
		}
		if base != pat || base == 0 {
			t.Errorf("shard %d/4: %d baseline and %d patched boots", k, base, pat)
		}
	}
	for i := 1; i <= len(all); i++ {
		if seen[i] != 1 {
			t.Errorf("boot %d is in %d shards", i, seen[i])
		}
	}
	if got := (Shard{}).Pick(all); len(got) != len(all) {
		t.Errorf("no shard: %d of %d boots", len(got), len(all))
	}
}

func TestParse(t *testing.T) {
	for _, bad := range []string{"4/4", "-1/2", "1", "a/b", "1/0", "01/2"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("shard %q accepted", bad)
		}
	}
	if s, err := Parse("1/3"); err != nil || s != (Shard{1, 3}) || s.String() != "1/3" {
		t.Errorf("1/3: %v %v", s, err)
	}
}

// Deal numbers boots as the whole run does, pair by pair.
func TestDeal(t *testing.T) {
	for _, tc := range []struct {
		name          string
		shapes, boots int
		variants      []variant.Variant
		n             int
		want          [][]int
		pairs         int
	}{
		{"one shard", 1, 2, variant.Both, 1, [][]int{{1, 2, 3, 4}}, 2},
		{"pairs round-robin", 2, 2, variant.Both, 3, [][]int{{1, 2, 7, 8}, {3, 4}, {5, 6}}, 4},
		{"one variant (--only)", 1, 3, []variant.Variant{variant.Patched}, 2, [][]int{{1, 3}, {2}}, 3},
		{"more shards than pairs", 1, 1, variant.Both, 2, [][]int{{1, 2}, nil}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, pairs := Deal(Same(tc.shapes, tc.boots), tc.variants, tc.n)
			if !reflect.DeepEqual(got, tc.want) || pairs != tc.pairs {
				t.Errorf("Deal = %v, %d pairs; want %v, %d", got, pairs, tc.want, tc.pairs)
			}
		})
	}
}

// Shapes of a run may boot their kernels a different number of times (the
// seeds under icount, the boots on the wall clock): each deals its own.
func TestOrderPerShape(t *testing.T) {
	var got []string
	for _, s := range Order([]int{1, 3}, variant.Both) {
		got = append(got, fmt.Sprintf("%d/%d/%s", s.Shape, s.Round, s.Variant))
	}
	want := "0/0/baseline 0/0/patched 1/0/baseline 1/0/patched 1/1/baseline 1/1/patched 1/2/baseline 1/2/patched"
	if strings.Join(got, " ") != want {
		t.Errorf("order %s, want %s", strings.Join(got, " "), want)
	}
	if _, pairs := Deal([]int{1, 3}, variant.Both, 2); pairs != 4 {
		t.Errorf("pairs %d, want 4", pairs)
	}
}
