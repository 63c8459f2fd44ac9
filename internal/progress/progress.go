// Package progress shows long work as it goes: kernel builds (objects
// compiled against the last build of the same directory, with an ETA) and
// boots (benchmarks done of all the run's, with an ETA). On a terminal it is
// a live display (go-pretty's progress); elsewhere (CI logs) timestamped
// lines.
package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/jedib0t/go-pretty/v6/progress"
	"golang.org/x/sys/unix"
)

// Reporter is where a run says what it is doing.
type Reporter interface {
	// Logf prints a timestamped line.
	Logf(format string, args ...any)
	// Build reports a kernel build: objects compiled so far, and how many
	// the last build of the same directory compiled (0: unknown).
	Build(label string, compiled, expected int, elapsed time.Duration)
	// BuildDone ends a build's report.
	BuildDone(label string)
	// Measure reports the boots: results received of all the run's.
	Measure(done, total int)
	// Stop ends the display.
	Stop()
}

// New reports to w: live when w is a terminal.
func New(w io.Writer, start time.Time) Reporter {
	lines := &Lines{W: w, Start: start}
	if !IsTerminal(w) {
		return lines
	}
	return newLive(w, lines)
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Lines prints timestamped lines: for logs that are read later.
type Lines struct {
	W     io.Writer
	Start time.Time
	mu    sync.Mutex
	last  time.Time // of the last measure line
	// measuring is when the first measure line came: the boots' ETA is from
	// their own pace, not the run's (whose first minutes may be a build).
	measuring time.Time
}

func (l *Lines) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.W, "[%6.1fs] %s\n", time.Since(l.Start).Seconds(), s)
}

// Logf prints one line.
func (l *Lines) Logf(format string, args ...any) { l.line(fmt.Sprintf(format, args...)) }

// Build prints how far a build is (the builder calls it every few seconds).
func (l *Lines) Build(label string, compiled, expected int, elapsed time.Duration) {
	l.line(BuildLine(label, compiled, expected, elapsed))
}

// BuildLine says how far a build is, with an ETA when the last build of
// the same directory says how big it will be.
func BuildLine(label string, compiled, expected int, elapsed time.Duration) string {
	pct := ""
	// The last build of this directory is the best guess of this one's
	// size, until this one outgrows it.
	if expected > 0 && compiled < expected {
		pct = fmt.Sprintf(" (~%d%% of the last build's %d%s)", 100*compiled/expected, expected, eta(elapsed, compiled, expected))
	}
	return fmt.Sprintf("build %s: %d compiled%s, %s", label, compiled, pct, elapsed.Round(time.Second))
}

// BuildDone prints nothing: the caller says how the build ended.
func (l *Lines) BuildDone(string) {}

// Measure prints the run's progress at most every 30 s, with an ETA.
func (l *Lines) Measure(done, total int) {
	l.mu.Lock()
	if l.measuring.IsZero() {
		l.measuring = time.Now()
	}
	since := time.Since(l.measuring)
	due := time.Since(l.last) > 30*time.Second || done == total
	if due {
		l.last = time.Now()
	}
	l.mu.Unlock()
	if due && total > 0 {
		l.line(fmt.Sprintf("measure: %d of %d benchmark results%s", done, total, eta(since, done, total)))
	}
}

// Stop does nothing for lines.
func (l *Lines) Stop() {}

func eta(elapsed time.Duration, done, total int) string {
	if done == 0 || done >= total {
		return ""
	}
	left := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	return fmt.Sprintf(", about %s left", left.Round(time.Second))
}

// live is the terminal display: a tracker per build and one for the boots.
type live struct {
	pw      progress.Writer
	lines   *Lines
	mu      sync.Mutex
	builds  map[string]*progress.Tracker
	measure *progress.Tracker
	start   time.Time
}

func newLive(w io.Writer, lines *Lines) *live {
	pw := progress.NewWriter()
	pw.SetOutputWriter(w)
	pw.SetAutoStop(false)
	pw.SetUpdateFrequency(250 * time.Millisecond)
	pw.SetTrackerPosition(progress.PositionRight)
	pw.SetMessageLength(36)
	pw.ShowETA(true)
	pw.Style().Visibility.ETA = true
	pw.Style().Visibility.Time = true
	go pw.Render()
	return &live{pw: pw, lines: lines, builds: map[string]*progress.Tracker{}}
}

func (v *live) Logf(format string, args ...any) {
	v.pw.Log("[%6.1fs] %s", time.Since(v.lines.Start).Seconds(), fmt.Sprintf(format, args...))
}

func (v *live) Build(label string, compiled, expected int, elapsed time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.builds[label]
	if !ok {
		t = &progress.Tracker{Message: "build " + label, Total: int64(expected), Units: progress.UnitsDefault}
		v.builds[label] = t
		v.pw.AppendTracker(t)
	}
	if expected > 0 && int64(compiled) > t.Total {
		t.UpdateTotal(int64(compiled) + 1)
	}
	t.SetValue(int64(compiled))
}

func (v *live) BuildDone(label string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if t, ok := v.builds[label]; ok {
		t.MarkAsDone()
	}
}

func (v *live) Measure(done, total int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.measure == nil {
		v.measure = &progress.Tracker{Message: "boots: benchmark results", Total: int64(total), Units: progress.UnitsDefault}
		v.pw.AppendTracker(v.measure)
	}
	v.measure.SetValue(int64(done))
	if done >= total {
		v.measure.MarkAsDone()
	}
}

func (v *live) Stop() {
	v.pw.Stop()
	for v.pw.IsRenderInProgress() {
		time.Sleep(10 * time.Millisecond)
	}
}
