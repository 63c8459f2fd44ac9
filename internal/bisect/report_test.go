package bisect

import (
	"context"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"lab/internal/results"
)

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

func TestReportFormats(t *testing.T) {
	for _, each := range []bool{false, true} {
		r := fakeRecord(t, each)
		files, err := Files(r)
		if err != nil {
			t.Fatal(err)
		}
		md := string(files["report.md"])
		want := []string{"culprit: step 5, 0005-x.patch \"x: change 5\"", "step 3 skipped: does not build", "**← culprit**"}
		if each {
			want = []string{"lab bisect --each", "patch by patch", "the largest is step 5"}
		}
		for _, w := range want {
			if !strings.Contains(md, w) {
				t.Errorf("each=%v: report.md lacks %q:\n%s", each, w, md)
			}
		}
		for _, line := range strings.Split(string(files["report-80.txt"]), "\n") {
			if len([]rune(line)) > 80 {
				t.Errorf("report-80.txt line of %d columns: %q", len([]rune(line)), line)
			}
		}
		var suite struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		}
		if err := xml.Unmarshal(files["junit.xml"], &suite); err != nil || suite.Tests != 7 || suite.Failures != 1 {
			t.Errorf("junit: %+v %v\n%s", suite, err, files["junit.xml"])
		}
		if !strings.Contains(string(files["report.html"]), "<svg") {
			t.Error("report.html has no chart")
		}
	}
}
