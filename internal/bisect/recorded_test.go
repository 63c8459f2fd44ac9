package bisect

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"lab/internal/results"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the recorded fakes in ../bisectreport/testdata/")

// fakeRecord is a bisect of 6 patches with the culprit at step 5 and step 3
// not building, as the search records it.
func fakeRecord(t *testing.T, each bool) *results.Run {
	env := newFake(step(5, 6, 0.07), 1e-6)
	env.skip[3] = "build"
	var res *Result
	var err error
	if each {
		res, err = Each(context.Background(), env, icount)
	} else {
		res, err = Search(context.Background(), env, icount)
	}
	if err != nil {
		t.Fatal(err)
	}
	r := &results.Run{Lab: "fake", RunID: "bisect-1", LabVersion: "abc1234", Command: []string{"lab", "bisect", "labs/fake.yaml"},
		Bisect: &results.Bisect{Range: "series fake (apply mode, 6 patches)", Figure: results.Figure{Benchmark: "uprobe-nop", Producers: 1},
			Chosen: "asked for on the command line", Clock: results.ClockICount}}
	var steps []results.BisectStep
	for k := 0; k <= 6; k++ {
		steps = append(steps, results.BisectStep{Index: k, Name: fmt.Sprintf("000%d-x.patch", k), Subject: fmt.Sprintf("x: change %d", k), SameAs: -1})
	}
	Record(r.Bisect, res, steps, each)
	return r
}

// The fake bisects the renderers' tests read (package bisectreport) are
// what the search records today: -update writes them again.
func TestRecordedFake(t *testing.T) {
	for name, each := range map[string]bool{"bisect-search.json": false, "bisect-each.json": true} {
		r := fakeRecord(t, each)
		r.Kind, r.Schema, r.Complete = results.KindBisect, results.Schema, true
		r.Boots = nil
		data, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "bisectreport", "testdata", name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, data) {
			t.Errorf("%s differs from what the search records (go test ./internal/bisect -run TestRecordedFake -update): %v", path, err)
		}
	}
}
