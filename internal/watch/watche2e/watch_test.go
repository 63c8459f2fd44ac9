package watche2e

import (
	"bufio"
	"bytes"
	"io"
	"net/mail"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"lab/internal/history"
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
// series as v1, its v2 and a broken mail; lab watch builds and boots real
// kernels for v1, then for v2 against v1 and the baseline; stopped during
// v2's boots and started again, it finishes v2; each reply is threaded
// under its cover letter, accepted by a real MTA (OpenSMTPD) and written
// to a Maildir once; a last pass does nothing.
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
	for _, m := range testenv.LazySeries(t, "../../..", 2, "lazy-v1@kernel.org") {
		pi.Deliver(t, m)
	}
	pi.Deliver(t, testenv.BrokenPatch(t, "../../.."))

	work := t.TempDir()
	hist := filepath.Join(work, "history.db")
	maildir := filepath.Join(work, "replies")
	args := []string{"--inbox", pi.Dir, "--history", hist, "--results", filepath.Join(work, "results"), "--cache", testbed.DefaultCache(),
		"--accel", "tcg", "--maildir", maildir, "--smtp", mta.Addr, "--to", "author", labFile}

	start := time.Now()
	out, code := watchOnce(t, args, "[PATCH v2 0/2] uprobes: two common case speed ups: running", "] boot 1/")
	if code != 143 {
		t.Fatalf("stopped during v2's boots: exit %d, want 143", code)
	}
	for _, w := range []string{"[PATCH] mm: fix a comment: skipped: touches none of the watched paths (mm/memory.c)",
		"numbered 3/2", "[PATCH 0/2] uprobes: two common case speed ups: answered (verdict)",
		"[PATCH v2 0/2] uprobes: two common case speed ups: running on lab watch-lazy"} {
		if !strings.Contains(out, w) {
			t.Errorf("first pass: output lacks %q", w)
		}
	}
	out, code = watchOnce(t, args)
	if code != 0 || !strings.Contains(out, "[PATCH v2 0/2] uprobes: two common case speed ups: answered (verdict)") ||
		!strings.Contains(out, "0 mails read") {
		t.Fatalf("second pass: exit %d", code)
	}
	t.Logf("from the first mail read to v2's reply queued: %s", time.Since(start).Round(time.Second))
	out, code = watchOnce(t, args)
	if code != 0 || !strings.Contains(out, "0 series answered") || strings.Contains(out, "outbox:") {
		t.Errorf("idle pass: exit %d", code)
	}

	got := mta.Delivered(t, 2)
	if len(got) != 2 {
		t.Fatalf("the MTA delivered %d replies, want 2", len(got))
	}
	if files, _ := filepath.Glob(filepath.Join(maildir, "new", "*")); len(files) != 2 {
		t.Errorf("the Maildir holds %d replies, want 2", len(files))
	}
	bodies := map[string]string{}
	for _, raw := range got {
		m, err := mail.ReadMessage(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		bodies[m.Header.Get("In-Reply-To")] = string(raw)
		if m.Header.Get("X-Lab-Verdict") != "verdict" {
			t.Errorf("reply to %s: verdict %q", m.Header.Get("In-Reply-To"), m.Header.Get("X-Lab-Verdict"))
		}
	}
	v1, v2 := bodies["<lazy-v1@kernel.org>"], bodies["<lazy-v2@kernel.org>"]
	for _, w := range []string{"Subject: Re: [PATCH 0/2] uprobes: two common case speed ups", "uretprobe-nop", "lab run ", "results.json"} {
		if !strings.Contains(v1, w) {
			t.Errorf("v1's reply lacks %q:\n%s", w, v1)
		}
	}
	for _, w := range []string{"Subject: Re: [PATCH v2 0/2] uprobes: two common case speed ups", "v2 against v1", "uretprobe-nop"} {
		if !strings.Contains(v2, w) {
			t.Errorf("v2's reply lacks %q:\n%s", w, v2)
		}
	}
	t.Logf("v2's reply:\n%s", v2)

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
