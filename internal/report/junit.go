package report

import (
	"encoding/xml"
	"fmt"

	"lab/internal/stats"
	"lab/internal/verdict"
)

// JUnitSuite is a JUnit XML test suite, as CI systems (GitLab, Jenkins,
// GitHub test reporters) read it.
type JUnitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []JUnitCase `xml:"testcase"`
}

// JUnitCase is one test case: a row of a table, a claim, a bisect step.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Class     string        `xml:"classname,attr"`
	Failure   *JUnitMessage `xml:"failure,omitempty"`
	Skip      *JUnitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

// JUnitMessage is a failure's or a skip's message.
type JUnitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// Add appends a case and counts it.
func (s *JUnitSuite) Add(c JUnitCase) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	if c.Failure != nil {
		s.Failures++
	}
	if c.Skip != nil {
		s.Skipped++
	}
}

// XML is the suite as a file.
func (s *JUnitSuite) XML() ([]byte, error) {
	out, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// JUnit is a run's report as JUnit: one case per row of every table (a
// significant slowdown of a non-control row fails it) and one per claim
// (failed unless reproduced).
func JUnit(d *Document) *JUnitSuite {
	s := &JUnitSuite{Name: "lab " + d.Lab}
	type judged struct {
		class string
		t     verdict.Table
	}
	// The cases of each kernel against the first (what the gates judge),
	// named by it when the report names its comparisons.
	var tables []judged
	for _, c := range d.Comparisons {
		if c.Against != d.Kernels[0] {
			continue
		}
		class := "lab." + d.Lab + "."
		if d.named() {
			class += string(c.Patched) + "."
		}
		for _, t := range c.Tables {
			tables = append(tables, judged{class + t.Name(), t})
		}
	}
	for _, j := range tables {
		t, class := j.t, j.class
		for _, r := range t.AllRows() {
			c := JUnitCase{Name: r.Label(), Class: class, SystemOut: changeText(r.Change)}
			switch {
			case r.Change.NoData:
				c.Skip = &JUnitMessage{Message: "no figures on one side"}
			case !r.Control && r.Change.Verdict == stats.Slower:
				c.Failure = &JUnitMessage{Message: "significantly slower: " + changeText(r.Change), Text: Headline(t)}
			}
			s.Add(c)
		}
	}
	for i, cl := range d.Claims {
		c := JUnitCase{Name: fmt.Sprintf("claim %d: %s", i+1, cl.Text()), Class: "lab." + d.Lab + ".claims", SystemOut: evidence(cl)}
		if cl.Verdict != verdict.Reproduced {
			c.Failure = &JUnitMessage{Message: cl.Verdict, Text: evidence(cl)}
		}
		s.Add(c)
	}
	return s
}

func changeText(c stats.Change) string {
	if c.NoData || c.Exact {
		return c.Words()
	}
	return fmt.Sprintf("%s (%s)", c.Words(), verdictMark(c))
}
