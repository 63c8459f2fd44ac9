package serve

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lab/internal/history"
	"lab/internal/lines"
)

// benchBoots is the size of the history the page benchmark serves.
const benchBoots = 100_000

// bigHistory is a history of benchBoots boots as a team's grows: labs
// tracked along a branch, each commit booted a few times, a step planted
// in each lab's uprobe-nop. Kept in the temp folder between runs: making
// it takes a minute.
func bigHistory(b *testing.B) *history.Store {
	const labs, commits, bootsPer = 20, 1000, 5
	path := filepath.Join(os.TempDir(), fmt.Sprintf("lab-serve-bench-%d.db", labs*commits*bootsPer))
	_, err := os.Stat(path)
	fresh := os.IsNotExist(err)
	s, err := history.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if !fresh {
		return s
	}
	start := time.Now()
	host := history.Host{Name: "bench", CPUModel: "AMD EPYC", CPUs: 2, Kernel: "6.1.0", QEMUVersion: "7.2.22"}
	for l := range labs {
		lab := fmt.Sprintf("lab-%02d", l)
		r := &history.Run{Lab: lab, RunID: "track-1", Kind: history.KindTrack, LabVersion: "bench", Command: []string{"lab", "track"},
			Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
			Source:  history.Source{Desc: "git", ID: "git-bench", Commit: "base", KernelVersion: "6.12.0"}}
		for c := range commits {
			commit := fmt.Sprintf("%040x", l*commits+c+1)
			step := 1.0
			if c >= commits/2 {
				step = 0.99
			}
			for range bootsPer {
				idx := len(r.Boots) + 1
				noise := 1 + 1e-6*math.Sin(float64(idx))
				r.Boots = append(r.Boots, history.Boot{Index: idx, Commit: commit, CommitSeq: c + 1, KernelKey: "k" + commit[30:],
					ImageSHA256: "i" + commit[30:], Arch: "x86_64", CPUs: 1, Topology: "sockets=1,cores=1,threads=1",
					Clock: history.ClockICount, Accel: "tcg", Host: host, Method: "producer-program",
					Figures: []history.Figure{
						{Benchmark: "uprobe-nop", Producers: 1, Metric: history.MetricRate, Value: 1.15e6 * step * noise},
						{Benchmark: "uretprobe-nop", Producers: 1, Metric: history.MetricRate, Value: 0.62e6 * noise},
						{Benchmark: "syscall-count", Producers: 1, Metric: history.MetricRate, Value: 5.74e6 * noise},
						{Benchmark: "usermode-count", Producers: 1, Metric: history.MetricRate, Value: 198e6 * noise},
					}})

			}
		}
		if _, err := s.Add(context.Background(), r); err != nil {
			os.Remove(path)
			b.Fatal(err)
		}
	}
	b.Logf("made %s: %d boots in %v", path, labs*commits*bootsPer, time.Since(start).Round(time.Second))
	return s
}

// firstByte is the time from sending a GET to its answer's first byte.
func firstByte(b *testing.B, url string) time.Duration {
	var start, got time.Time
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { got = time.Now() }}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", url, nil)
	start = time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s: %d", url, resp.StatusCode)
	}
	return got.Sub(start)
}

// BenchmarkPages is the time to the first byte of every page on a history
// of 100,000 boots (target: 200 ms), the analysis kept; and of the first
// page after the history changed, which reads it again.
//
//	go test -run '^$' -bench Pages -benchtime 10x ./internal/serve
func BenchmarkPages(b *testing.B) {
	s := bigHistory(b)
	srv, err := New(Options{Store: s, Results: examples, Token: token, MinPct: -1})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	start := time.Now()
	if err := srv.Warm(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Logf("the analysis read before serving (lab serve's start): %v", time.Since(start).Round(time.Millisecond))
	h, err := lines.Load(context.Background(), s, lines.Options{MinPct: -1})
	if err != nil {
		b.Fatal(err)
	}
	var id string
	changed := 0
	for i := range h.Lines {
		if len(h.Lines[i].Changes) > 0 {
			changed++
			if id == "" {
				id = LineID(h.Lines[i].Key)
			}
		}
	}
	b.Logf("%d lines, %d with a change point", len(h.Lines), changed)
	if id == "" {
		b.Fatal("no change point found in the planted steps")
	}
	for _, page := range []string{"/", "/lines/" + id, "/lines/" + id + "/levels/500", "/runs/", "/watch"} {
		b.Run(strings.Trim(strings.ReplaceAll(page, "/"+id, "/ID"), "/"), func(b *testing.B) {
			var worst time.Duration
			for b.Loop() {
				worst = max(worst, firstByte(b, ts.URL+page))
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
		})
	}
	b.Run("after-an-annotation", func(b *testing.B) {
		var worst time.Duration
		for b.Loop() {
			b.StopTimer()
			if _, err := s.AddAnnotation(context.Background(), history.Annotation{Lab: "lab-00", Line: "x", Commit: "y", Label: history.LabelNote, Author: "bench"}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			worst = max(worst, firstByte(b, ts.URL+"/"))
		}
		b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
	})
	// New boots: the page answers from the analysis before while the
	// new one is read in the background.
	b.Run("after-new-boots", func(b *testing.B) {
		var worst time.Duration
		n := 0
		for b.Loop() {
			b.StopTimer()
			n++
			r := &history.Run{Lab: "lab-new", RunID: fmt.Sprintf("run-%d-%d", time.Now().UnixNano(), n), Kind: history.KindRun, LabVersion: "bench",
				Command: []string{"lab", "run"}, Started: time.Now(), Source: history.Source{Desc: "git", ID: "git-bench", Commit: "base", KernelVersion: "6.12.0"},
				Boots: []history.Boot{{Index: 1, Variant: "baseline", Commit: "base", KernelKey: "k", ImageSHA256: "i", Arch: "x86_64", CPUs: 1,
					Topology: "sockets=1,cores=1,threads=1", Clock: history.ClockICount, Accel: "tcg",
					Host:    history.Host{Name: "bench", CPUModel: "AMD EPYC", CPUs: 2, QEMUVersion: "7.2.22"},
					Figures: []history.Figure{{Benchmark: "uprobe-nop", Producers: 1, Metric: history.MetricRate, Value: 1e6}}}}}
			if _, err := s.Add(context.Background(), r); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			worst = max(worst, firstByte(b, ts.URL+"/"))
		}
		b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
	})
	srv.Close()
}
