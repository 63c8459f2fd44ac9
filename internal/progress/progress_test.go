package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestLines(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, time.Now()) // a buffer is not a terminal: lines
	if _, ok := l.(*Lines); !ok {
		t.Fatalf("a buffer got %T", l)
	}
	l.Build("x86_64/baseline", 300, 1200, 60*time.Second)
	l.Measure(2, 8)
	l.Measure(8, 8)
	out := buf.String()
	for _, want := range []string{"build x86_64/baseline: 300 compiled (~25% of the last build's 1200, about 3m0s left), 1m0s", "measure: 2 of 8 benchmark results", "measure: 8 of 8"} {
		if !strings.Contains(out, want) {
			t.Errorf("lines lack %q:\n%s", want, out)
		}
	}
}

// The live display renders trackers and log lines, and stops cleanly.
func TestLive(t *testing.T) {
	var buf bytes.Buffer
	v := newLive(&buf, &Lines{W: &buf, Start: time.Now()})
	v.Logf("source: Linux %s", "6.12.117")
	v.Build("x86_64/patched", 10, 20, time.Second)
	v.Measure(1, 4)
	time.Sleep(400 * time.Millisecond)
	v.BuildDone("x86_64/patched")
	v.Measure(4, 4)
	v.Stop()
	out := buf.String()
	for _, want := range []string{"source: Linux 6.12.117", "build x86_64/patched", "boots: benchmark results"} {
		if !strings.Contains(out, want) {
			t.Errorf("display lacks %q:\n%s", want, out)
		}
	}
}

// The boots' ETA comes from the boots' pace, not from a run whose first
// hour was a build.
func TestMeasureETAFromTheBoots(t *testing.T) {
	var buf bytes.Buffer
	l := &Lines{W: &buf, Start: time.Now().Add(-time.Hour)}
	l.Measure(0, 8)
	l.last = time.Time{} // due again at once
	l.Measure(4, 8)
	if out := buf.String(); !strings.Contains(out, "measure: 4 of 8 benchmark results, about 0s left") {
		t.Errorf("ETA not from the boots' own pace:\n%s", out)
	}
}
