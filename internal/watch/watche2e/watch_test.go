package watche2e

import (
	"bufio"
	"bytes"
	"io"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"lab/internal/history"
	"lab/internal/runfolder"
	"lab/internal/source"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/testenv"
)

// watchOnce runs lab watch --once; stopAt, when given, are lines after the
// last of which, in order, lab is sent SIGTERM (a watcher stopped
// mid-run). It returns the output and the exit code.
func watchOnce(t *testing.T, args []string, stopAt ...string) (string, int) {
	t.Helper()
	bin, err := testenv.LabBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"watch", "--once"}, args...)...)
	cmd.Dir = "../../.." // lab's checkout: the initramfs is built from it
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if len(stopAt) > 0 && strings.Contains(sc.Text(), stopAt[0]) {
				if stopAt = stopAt[1:]; len(stopAt) == 0 {
					cmd.Process.Signal(syscall.SIGTERM)
				}
			}
		}
	}()
	err = cmd.Wait()
	pw.Close()
	<-read
	t.Logf("lab watch --once %s: %v\n%s", strings.Join(args, " "), err, out.String())
	return out.String(), cmd.ProcessState.ExitCode()
}

// The scenario, for real: a public-inbox v2 inbox (Debian's
// public-inbox) receives an unrelated patch, the lazy uprobe args buffer
// series as v1 (a cover letter and 2 patches), a patch that applies
// nowhere, a v2 of one patch sent as b4 and git format-patch
// --cover-letter send it ([PATCH v2 0/1] and [PATCH v2 1/1], in reply to
// v1) and a broken mail; lab watch builds and boots real kernels for v1,
// then for v2 against v1 and the baseline; stopped during v2's boots and
// started again, it finishes v2; each reply is threaded under its cover
// letter, names no folder of the machine that ran it, is accepted by a
// real MTA (OpenSMTPD) and written to a Maildir once; a last pass does
// nothing.
func TestWatchAList(t *testing.T) {
	testenv.E2E(t, "lab watch builds and boots real kernels for two versions of a series")
	root := testenv.Checkout(t, "../../..")
	pi := testenv.NewPublicInbox(t)
	mta := testenv.StartMTA(t)
	labFile := testenv.WriteLab(t, root, "watch-lazy", `name: watch-lazy
description: lab watch's end-to-end lab
mode: auto
config: [common.config]
watch:
  paths: [kernel/events/uprobes.c, kernel/trace/trace_uprobe.c]
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uretprobe-nop]
  producers: [1]
  boots: 1 # icount: one boot a kernel gives its figure; the test reads replies
  duration: 250ms
  warmup: 0s
  controls: false # the reply's table needs a row, not the controls
  measure: icount
`)
	pi.Deliver(t, testenv.UnrelatedPatch())
	for _, m := range testenv.LazySeries(t, "../../..", 1, "") {
		pi.Deliver(t, m)
	}
	pi.Deliver(t, testenv.Mail([][2]string{{"From", "Old Tree <old@example.org>"}, {"To", "test-list@example.org"},
		{"Subject", "[PATCH] uprobes: a fix for an older tree"}, {"Message-ID", "<stale@example.org>"}},
		"It fixes a tree that is gone.\n---\ndiff --git a/kernel/events/uprobes.c b/kernel/events/uprobes.c\n--- a/kernel/events/uprobes.c\n"+
			"+++ b/kernel/events/uprobes.c\n@@ -100,3 +100,3 @@\n no such line in uprobes.c\n-nor this one\n+and this replaces it\n the end\n"))
	v2 := testenv.Sending{ID: "lazy-v2@kernel.org", Version: 2, InReplyTo: "lazy-v1@kernel.org", From: "Andrii Nakryiko <andrii@kernel.org>",
		Subject:   "uprobes: prepare the args buffer lazily",
		CoverBody: "The first patch alone; the second went in separately.\n\nChanges in v2:\n- drop patch 2\n- Link to v1: https://lore.kernel.org/r/lazy-v1@kernel.org\n",
		Patches:   [][2]string{{"uprobes: prepare uprobe args buffer lazily", testenv.LazyPatch(t, "../../..", 1)}}}
	for _, m := range v2.Mails() {
		pi.Deliver(t, m)
	}
	pi.Deliver(t, testenv.BrokenPatch(t, "../../.."))

	work := t.TempDir()
	hist := filepath.Join(work, "history.db")
	maildir := filepath.Join(work, "replies")
	args := []string{"--inbox", pi.Dir, "--history", hist, "--results", filepath.Join(work, "results"), "--cache", testbed.DefaultCache(),
		"--accel", "tcg", "--maildir", maildir, "--smtp", mta.Addr, "--to", "author", labFile}

	v2Name := "[PATCH v2 0/1] uprobes: prepare the args buffer lazily"
	start := time.Now()
	out, code := watchOnce(t, args, v2Name+": running", "] boot 1/")
	if code != 143 {
		t.Fatalf("stopped during v2's boots: exit %d, want 143", code)
	}
	for _, w := range []string{"[PATCH] mm: fix a comment: skipped: touches none of the watched paths (mm/memory.c)",
		"numbered 3/2", "[PATCH 0/2] uprobes: two common case speed ups: answered (verdict)",
		"[PATCH] uprobes: a fix for an older tree: answered (not-applied)", v2Name + ": running on lab watch-lazy"} {
		if !strings.Contains(out, w) {
			t.Errorf("first pass: output lacks %q", w)
		}
	}
	out, code = watchOnce(t, args)
	if code != 0 || !strings.Contains(out, v2Name+": answered (verdict)") || !strings.Contains(out, "0 mails read") {
		t.Fatalf("second pass: exit %d", code)
	}
	t.Logf("from the first mail read to v2's reply queued: %s", time.Since(start).Round(time.Second))
	out, code = watchOnce(t, args)
	if code != 0 || !strings.Contains(out, "0 series answered") || strings.Contains(out, "outbox:") {
		t.Errorf("idle pass: exit %d", code)
	}

	got := mta.Delivered(t, 3)
	if len(got) != 3 {
		t.Fatalf("the MTA delivered %d replies, want 3", len(got))
	}
	files, _ := filepath.Glob(filepath.Join(maildir, "new", "*"))
	if len(files) != 3 {
		t.Errorf("the Maildir holds %d replies, want 3", len(files))
	}
	home, _ := os.UserHomeDir()
	machine := []string{work, root, testbed.DefaultCache(), pi.Dir, os.TempDir() + "/", home + "/"}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if found := testenv.MachinePaths(raw, machine...); len(found) > 0 {
			t.Errorf("a reply names folders of this machine %q:\n%s", found, raw)
		}
	}
	bodies := map[string]string{}
	for _, raw := range got {
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		bodies[m.Header.Get("In-Reply-To")] = string(raw)
	}
	v1, v2r, stale := bodies["<lazy-v1@kernel.org>"], bodies["<lazy-v2@kernel.org>"], bodies["<stale@example.org>"]
	for _, w := range []string{"X-Lab-Verdict: verdict", "Subject: Re: [PATCH 0/2] uprobes: two common case speed ups", "uretprobe-nop", "lab run ", "results.json"} {
		if !strings.Contains(v1, w) {
			t.Errorf("v1's reply lacks %q:\n%s", w, v1)
		}
	}
	for _, w := range []string{"X-Lab-Verdict: verdict", "Subject: Re: " + v2Name, "series:   " + v2Name + " (1 patch)",
		"v2 against v1", "and against the base", "uretprobe-nop"} {
		if !strings.Contains(v2r, w) {
			t.Errorf("v2's reply lacks %q:\n%s", w, v2r)
		}
	}
	for _, w := range []string{"X-Lab-Verdict: not-applied", `patch "uprobes: a fix for an older tree": does not apply`, "b4 am -o - 'stale@example.org'"} {
		if !strings.Contains(stale, w) {
			t.Errorf("the stale patch's reply lacks %q:\n%s", w, stale)
		}
	}
	if strings.Contains(stale, "samples") {
		t.Errorf("a reply that measured nothing speaks of samples:\n%s", stale)
	}
	t.Logf("v2's reply:\n%s", v2r)

	store, err := history.Open(t.Context(), hist)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	broken, err := store.WatchMails(t.Context(), pi.Dir, "broken")
	if err != nil || len(broken) != 1 || !strings.Contains(broken[0].Reason, "numbered 3/2") {
		t.Errorf("the broken mail: %+v, %v", broken, err)
	}
}

// regressSeries is a 3-patch series on Debian's 6.12: a documentation
// note (the baseline's image), a moved log string (another image, no code
// a benchmark runs), then a spin on every uprobe hit. Its edits are the
// ones the bisect and icount tests start with, so its kernels are cache
// entries those tests share.
var regressSeries = []testenv.Edit{testenv.DocNote, testenv.InitLogLine, testenv.SpinOnEveryHit}

// A 3-patch series that makes uprobe hits slower, posted to a list whose
// lab's baseline kernel is cached: lab watch builds the series' kernel and
// its steps', boots each kernel image once (the baseline and the series in
// the run; the attribution takes their figures, finds the first step's
// image is the baseline's, and boots only the second step), names the
// third patch, and replies with where the culprit moved the path. The note of the
// issue gives the time from the first mail read to the reply.
func TestWatchAttributesARegression(t *testing.T) {
	testenv.E2E(t, "lab watch builds and boots real kernels for a regression and its patches")
	root := testenv.Checkout(t, "../../..")
	tree, err := source.Prepare(t.Context(), source.Origin{Tarball: spec.DefaultTarball, Package: spec.DefaultPackage}, testbed.DefaultCache(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	testenv.WriteSeries(t, tree, root, "regress", regressSeries)
	tree.Close()
	files, _ := filepath.Glob(filepath.Join(root, "patches", "regress", "*.patch"))
	if len(files) != len(regressSeries) {
		t.Fatalf("patches %v", files)
	}
	posting := testenv.Sending{ID: "regress@example.org", Subject: "uprobes: a note, a log line, and a spin", From: "Dev <dev@example.org>"}
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := strings.Cut(string(data), "\n\n")
		posting.Patches = append(posting.Patches, [2]string{regressSeries[i].Subject, body})
	}
	labFile := testenv.WriteLab(t, root, "watch-regress", `name: watch-regress
description: lab watch's attribution test
mode: auto
config: [common.config]
watch:
  paths: [kernel/events/uprobes.c]
matrix:
  arch: [x86_64]
  cpus: [1]
  benchmarks: [uprobe-nop]
  producers: [1]
  duration: 250ms
  warmup: 0s
  measure: icount
`)
	// The baseline kernel is the tarball's with the lab's config: cached
	// by the suite's other tests, or built here before the clock starts.
	bin, err := testenv.LabBinary()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	build := exec.Command(bin, "build", labFile, "--series", filepath.Join(root, "patches", "regress"), "--only", "baseline", "--cache", testbed.DefaultCache(), "--results", filepath.Join(work, "build"))
	build.Dir = "../../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("lab build --only baseline: %v\n%s", err, out)
	}
	pi := testenv.NewPublicInbox(t)
	for _, m := range posting.Mails() {
		pi.Deliver(t, m)
	}
	results := filepath.Join(work, "results")
	args := []string{"--inbox", pi.Dir, "--history", filepath.Join(work, "history.db"), "--results", results, "--cache", testbed.DefaultCache(),
		"--accel", "tcg", "--maildir", filepath.Join(work, "replies"), labFile}
	start := time.Now()
	out, code := watchOnce(t, args)
	t.Logf("from the first mail read to the reply queued, the baseline kernel cached: %s", time.Since(start).Round(time.Second))
	if code != 0 || !strings.Contains(out, "[PATCH 0/3] uprobes: a note, a log line, and a spin: answered (verdict)") {
		t.Fatalf("exit %d", code)
	}
	replies, _ := filepath.Glob(filepath.Join(work, "replies", "new", "*"))
	if len(replies) != 1 {
		t.Fatalf("%d replies", len(replies))
	}
	reply, _ := os.ReadFile(replies[0])
	for _, w := range []string{"X-Lab-Verdict: verdict", "uprobe-nop p=1 slower by", "(exact; 1 boot per kernel; floor",
		"Which patch made it slower", "CULPRIT", "spin-on-every-hit", "where it moved", "uprobe_notify_resume",
		"where the culprit moved it (step 3 against step 2"} {
		if !strings.Contains(string(reply), w) {
			t.Errorf("the reply lacks %q:\n%s", w, reply)
		}
	}
	// The profiles come from the measured boots (the plugin rides on the
	// first boot of each kernel), so every boot is counted here.
	booted := bootsPerImage(t, results)
	if len(booted) != 3 {
		t.Errorf("kernel images booted %v, want 3 (the baseline and step 1, step 2, the series)", booted)
	}
	for image, n := range booted {
		if n != 1 {
			t.Errorf("kernel image %s booted %d times", image, n)
		}
	}
}

// bootsPerImage counts the boots of each kernel image in every run and
// bisect under dir.
func bootsPerImage(t *testing.T, dir string) map[string]int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*", "results.json"))
	n := map[string]int{}
	for _, f := range files {
		_, r, err := runfolder.Load(filepath.Dir(f))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range r.Boots {
			image := r.ImageOf(b)
			if r.Bisect != nil {
				for _, st := range r.Bisect.Steps {
					if slices.Contains(st.Boots, b.Index) && st.Kernel != nil {
						image = st.Kernel.Info.ImageSHA256
					}
				}
			}
			t.Logf("%s: boot %d (%s) of image %.12s", r.RunID, b.Index, b.Variant, image)
			n[image]++
		}
	}
	return n
}
