package protocol

import (
	"reflect"
	"testing"
)

func TestJobRoundTrip(t *testing.T) {
	j := Job{Benchmarks: []string{"uprobe-nop"}, Producers: []int{1, 2}, Samples: 5, WarmupSamples: 1, Affinity: true}
	p, err := j.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCmdline("console=ttyS0 panic=-1 " + p + " quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, j) {
		t.Errorf("got %+v, want %+v", got, j)
	}
	if _, err := DecodeCmdline("console=ttyS0"); err == nil {
		t.Error("want an error without lab.job")
	}
	if _, err := DecodeCmdline(CmdlineKey + "=!!"); err == nil {
		t.Error("want an error for a bad encoding")
	}
}

// Figures of another sample length are another method's: a second's keeps
// the name histories already hold.
func TestJobMethod(t *testing.T) {
	for _, tc := range []struct {
		job  Job
		want string
	}{
		{Job{}, Method},
		{Job{SampleMS: 1000}, Method},
		{Job{SampleMS: 250}, Method + ", 250ms samples"},
	} {
		if got := tc.job.Method(); got != tc.want {
			t.Errorf("SampleMS %d: method %q, want %q", tc.job.SampleMS, got, tc.want)
		}
	}
}

// The sample length reads back from every method a job names; other
// methods name none.
func TestMethodSample(t *testing.T) {
	for _, ms := range []int{0, 1000, 500, 250, 100} {
		j := Job{SampleMS: ms}
		if got := MethodSample(j.Method()); got != j.Sample() {
			t.Errorf("SampleMS %d: %q reads back as %v, want %v", ms, j.Method(), got, j.Sample())
		}
	}
	for _, m := range []string{"", "goroutines", Method + ", soon samples", Method + ", -1s samples"} {
		if got := MethodSample(m); got != 0 {
			t.Errorf("%q: sample %v, want 0", m, got)
		}
	}
}
