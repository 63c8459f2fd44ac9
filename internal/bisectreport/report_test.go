package bisectreport

import (
	"encoding/xml"
	"fmt"
	"strings"
	"testing"

	"lab/internal/results"
)

// recorded is a fake bisect of 6 patches with the culprit at step 5 and
// step 3 not building, as the search records it (package bisect's
// TestRecordedFake writes it, from its fake environment).
func recorded(t *testing.T, each bool) *results.Run {
	name := "testdata/bisect-search.json"
	if each {
		name = "testdata/bisect-each.json"
	}
	r, err := results.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReportFormats(t *testing.T) {
	for _, each := range []bool{false, true} {
		r := recorded(t, each)
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

// The headline counts the boots the bisect spent, and says when the ends'
// figures came from boots before it (lab track --bisect hands over the
// history's): those are not boots it spent.
func TestHeadlineCountsEarlierFigures(t *testing.T) {
	r := recorded(t, false)
	spent := r.Bisect.Boots
	if h := Headline(r); !strings.Contains(h, " boots for ") || strings.Contains(h, "earlier") {
		t.Errorf("no earlier figures: %q", h)
	}
	r.Bisect.Earlier = 2
	if h := Headline(r); !strings.Contains(strings.Join(strings.Fields(h), " "), fmt.Sprintf("%d boots (the ends' figures from 2 earlier) for", spent)) {
		t.Errorf("two earlier figures: %q", h)
	}
}
