// Package shard deals a run's boots: the order they run in, and each
// host's share when N hosts split a run (lab run --shard K/N). lab run, the
// cluster plans and lab merge all deal through it, so they agree on every
// boot's number. It knows shapes only by their count, so that reading a
// run's record needs none of the code that boots one.
package shard

import (
	"fmt"

	"lab/internal/spec"
	"lab/internal/variant"
)

// Slot is one boot of a run: which shape, which round, which variant.
type Slot struct {
	Shape   int // index of the shape in the run's matrix (and of its plan in lab run)
	Round   int // 0-based: the i-th boot of this variant in this shape
	Variant variant.Variant
	Index   int // 1-based position in the whole run: the boot's number, also in a shard
}

// Order is the run's boot order, boots[p] rounds of shape p: shape after
// shape, and within a shape the variants alternate (baseline, patched,
// baseline, ...), so that drift of the host hits both alike.
func Order(boots []int, variants []variant.Variant) []Slot {
	var out []Slot
	for p, n := range boots {
		for i := 0; i < n; i++ {
			for _, v := range variants {
				out = append(out, Slot{Shape: p, Round: i, Variant: v, Index: len(out) + 1})
			}
		}
	}
	return out
}

// Shard is K of N: a run's share of the boots when N hosts share them.
type Shard struct{ K, N int }

// Parse reads "K/N" (0 <= K < N).
func Parse(s string) (Shard, error) {
	var sh Shard
	if _, err := fmt.Sscanf(s, "%d/%d", &sh.K, &sh.N); err != nil || fmt.Sprintf("%d/%d", sh.K, sh.N) != s {
		return Shard{}, fmt.Errorf("shard %q: want K/N, e.g. 0/4 (shards are numbered from 0)", s)
	}
	if sh.N < 1 || sh.K < 0 || sh.K >= sh.N {
		return Shard{}, fmt.Errorf("shard %d/%d: want 0 <= K < N", sh.K, sh.N)
	}
	return sh, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// Pick keeps this shard's boots. Boots go by pairs (a round of a shape:
// baseline then patched, back to back on one host), dealt out round-robin
// over all shapes, so that every shard boots both variants, and of every
// shape when there are enough pairs.
func (s Shard) Pick(slots []Slot) []Slot {
	if s.N <= 1 {
		return slots
	}
	pair := map[[2]int]int{} // (shape, round) -> pair number
	var out []Slot
	for _, sl := range slots {
		k := [2]int{sl.Shape, sl.Round}
		n, ok := pair[k]
		if !ok {
			n = len(pair)
			pair[k] = n
		}
		if n%s.N == s.K {
			out = append(out, sl)
		}
	}
	return out
}

// ShardBoots are each shape's boots per kernel in a run spread over hosts
// (lab run --shard, lab plan, lab merge): by the lab's own clock, not a
// host's, so that the host that plans and each that boots deal alike (a
// submit host without KVM would plan icount where the nodes run the wall
// clock): the lab's seeds when it says measure: icount, its boots
// otherwise.
func ShardBoots(m spec.Matrix) ([]int, error) {
	shapes, err := m.ShapeCount()
	if err != nil {
		return nil, err
	}
	return Same(shapes, m.BootsFor(m.Measure == spec.MeasureICount)), nil
}

// Same is n shapes' boots of boots each.
func Same(n, boots int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = boots
	}
	return out
}

// Deal gives each of n shards its boot numbers, as lab run --shard deals
// them (Order, then Pick), and the run's pair count: a round of a shape.
func Deal(boots []int, variants []variant.Variant, n int) (shards [][]int, pairs int) {
	slots := Order(boots, variants)
	shards = make([][]int, n)
	for k := range shards {
		for _, s := range (Shard{K: k, N: n}).Pick(slots) {
			shards[k] = append(shards[k], s.Index)
		}
	}
	for _, b := range boots {
		pairs += b
	}
	return shards, pairs
}
