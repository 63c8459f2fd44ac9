package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"lab/internal/cluster"
	"lab/internal/flagval"
	"lab/internal/history"
	"lab/internal/inbox"
	"lab/internal/initramfs"
	"lab/internal/outbox"
	"lab/internal/series"
	"lab/internal/spec"
	"lab/internal/testbed"
	"lab/internal/version"
	"lab/internal/watch"
	"lab/internal/watch/labenv"
)

const watchHelp = `lab watch --inbox PATH LAB.yaml... [flags]: run the series posted to a list, and reply
lab watch status [--history H] [--inbox PATH]: what the watcher has seen, queued, run and answered

PATH is a public-inbox v2 archive (a git clone --mirror of a lore list's
epochs: git/0.git, git/1.git...), a Maildir or an mbox spool. Each pass reads
the mails that came since the last (where it stopped is kept in the history),
assembles each posted series (a cover letter 0/n and its patches k/n for any
n, threaded shallow, deep or not at all, parts in any order and any pass; or
one patch; one whose parts have not all come waits up to --wait, one whose
patches reply to a cover letter not come yet up to 10 minutes), and runs, one at a
time, each that touches what a watched lab measures: the lab's watch: paths
(files, folders ending in /, globs), else the files of the lab's own series,
or whose subject matches watch: subject. A new version of a series runs
with the version before it (known by a link to it, b4's change-id, the
thread it was sent in, or its author and a subject, whatever its length),
both against one baseline; a RESEND of patches answered before is skipped.
Each run's reply is
threaded under the series' cover letter and goes to --maildir and, with
--smtp, to the recipients --to names (none by default: nothing is mailed).
Every mail, series, run and reply is recorded in the history; a watcher
stopped at any point and started again loses nothing and sends nothing twice.

Flags:
`

type watchFlags struct {
	build    testbed.Flags
	history  historyFlags
	inbox    flagval.String
	once     flagval.Bool
	every    flagval.Duration
	wait     flagval.Duration
	maildir  flagval.String
	smtp     flagval.String
	to, from flagval.String
	// A cluster to hand the series to (lab submit slurm's flags).
	submit, partition flagval.String
	shards            flagval.Int
	exclusive         flagval.Bool
}

func (f *watchFlags) RegisterFlags(fs *flag.FlagSet) {
	f.build.RegisterFlags(fs)
	f.history.RegisterFlags(fs)
	f.every.V, f.wait.V = 5*time.Minute, 2*time.Hour
	f.from.V = "lab <lab@localhost>"
	fs.Var(&f.inbox, "inbox", "the list's archive: a public-inbox v2 folder, a Maildir or an mbox")
	fs.Var(&f.once, "once", "one pass, then exit (for cron)")
	fs.Var(&f.every, "every", "time between passes")
	fs.Var(&f.wait, "wait", "how long a series whose parts have not all come is waited for")
	fs.Var(&f.maildir, "maildir", "write every reply into this Maildir")
	fs.Var(&f.smtp, "smtp", "HOST:PORT of an MTA that mails the replies to --to's recipients")
	fs.Var(&f.to, "to", "who replies are for: none (the default: the Maildir only), author, list:ADDRESS (the author, the list in Cc) or one ADDRESS")
	fs.Var(&f.from, "from", "the replies' From:")
	f.shards.V, f.exclusive.V = 1, true
	fs.Var(&f.submit, "submit", "hand each series to a cluster instead of running it here: slurm (lab submit slurm's build, boot array and merge; a later pass answers it once the merge has ended)")
	fs.Var(&f.shards, "shards", "with --submit slurm: boot shards per series")
	fs.Var(&f.partition, "partition", "with --submit slurm: the Slurm partition of every job (default: the cluster's)")
	fs.Var(&f.exclusive, "exclusive", "with --submit slurm: a node of its own for every boot task (--exclusive=false for icount labs)")
}

func watchCommand(fs *flag.FlagSet) func(context.Context, invocation) error {
	var f watchFlags
	f.RegisterFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), watchHelp)
		fs.PrintDefaults()
	}
	return func(ctx context.Context, inv invocation) error {
		if len(inv.args) > 0 && inv.args[0] == "status" {
			return f.status(ctx, inv)
		}
		return f.watch(ctx, fs, inv)
	}
}

func (f *watchFlags) watch(ctx context.Context, fs *flag.FlagSet, inv invocation) error {
	switch {
	case len(inv.args) == 0:
		return usagef("watch takes the labs it runs series on: lab watch --inbox PATH LAB.yaml...")
	case !f.inbox.IsSet():
		return usagef("watch needs --inbox: the list's archive (a public-inbox v2 folder, a Maildir or an mbox)")
	case f.smtp.IsSet() && !f.to.IsSet():
		return usagef("--smtp without --to: say who the replies are for (author, list:ADDRESS or an address)")
	}
	to, err := watch.ParseRecipients(f.to.V)
	if err != nil {
		return usageError{err.Error()}
	}
	archive, err := inbox.Open(f.inbox.V)
	if err != nil {
		return err
	}
	labs, root, err := watchedLabs(inv.args)
	if err != nil {
		return err
	}
	// A series from a list is someone else's code: --sandbox auto
	// builds it in the sandbox ("" is where standard input's come from).
	set, err := f.build.Apply(root, []string{""})
	if err != nil {
		return usageError{err.Error()}
	}
	store, err := f.openHistory(ctx, set.ResultsDir)
	if err != nil {
		return err
	}
	defer store.Close()
	env, err := f.env(fs, set, root, inv, store)
	if err != nil {
		return err
	}
	cfg := watch.Config{Inbox: archive, Labs: labs, History: store, Wait: f.wait.V, Recipients: to, From: f.from.V, Out: inv.out, Env: env}
	delivery := outbox.Delivery{Maildir: f.maildir.V, SMTP: f.smtp.V, Sender: f.from.V, Out: inv.out}
	for {
		if err := watchPass(ctx, cfg, store, delivery, inv.out); err != nil || f.once.V {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(f.every.V):
		}
	}
}

// watchPass is one pass: read, run, answer, deliver.
func watchPass(ctx context.Context, cfg watch.Config, store *history.Store, d outbox.Delivery, out io.Writer) error {
	start := time.Now()
	st, err := watch.Once(ctx, cfg)
	if st != nil {
		fmt.Fprintf(out, "watch: %d mails read in %s (%d seen before): %s; %d stored mails parsed into series; %d series answered, %d waiting, %d skipped, %d incomplete\n",
			st.Read, time.Since(start).Round(time.Millisecond), st.Duplicates, kinds(st), st.Parsed, st.Answered, st.Waiting, st.Skipped, st.Incomplete)
		if st.Submitted+st.Pending > 0 {
			fmt.Fprintf(out, "watch: %d series handed to the cluster, %d handed before and still running there\n", st.Submitted, st.Pending)
		}
	}
	if err != nil {
		return err
	}
	r, err := outbox.Deliver(ctx, store, d)
	if r != nil && (r.Maildir+r.Mailed > 0 || len(r.Failed)+len(r.Unsure) > 0) {
		fmt.Fprintf(out, "outbox: %d replies written to the Maildir, %d mailed, %d to try again, %d left with the MTA by a stopped watcher\n",
			r.Maildir, r.Mailed, len(r.Failed), len(r.Unsure))
	}
	return err
}

func kinds(st *watch.Stats) string {
	var parts []string
	for k, n := range st.ByKind {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	if len(parts) == 0 {
		return "nothing new"
	}
	return strings.Join(parts, ", ")
}

// watchedLabs loads the labs and what makes a series each one's: its
// watch: paths, else the files its own series touches.
func watchedLabs(files []string) ([]watch.Lab, string, error) {
	var labs []watch.Lab
	root := ""
	for _, file := range files {
		lab, err := spec.Load(file)
		if err != nil {
			return nil, "", err
		}
		if root == "" {
			if root, err = initramfs.FindModuleRoot(lab.Root); err != nil {
				return nil, "", err
			}
		}
		w := watch.Lab{Spec: lab, Paths: lab.Watch.Paths}
		if lab.Watch.Subject != "" {
			w.Subject = regexp.MustCompile(lab.Watch.Subject) // checked by Load
		}
		if len(w.Paths) == 0 && lab.Series != "" {
			s, err := series.Open(lab.SeriesPath(), nil, "")
			if err != nil {
				return nil, "", fmt.Errorf("%s: the files its series touches, which lab watch watches without watch: paths: %w", file, err)
			}
			for _, p := range s.Patches {
				w.Paths = append(w.Paths, p.Files...)
			}
			s.Close()
		}
		if len(w.Paths) == 0 && w.Subject == nil {
			return nil, "", fmt.Errorf("%s: nothing to watch: give it watch: paths (or a series, whose files are watched)", file)
		}
		labs = append(labs, w)
	}
	return labs, root, nil
}

// openHistory opens the history the watcher keeps its state in: it needs
// one.
func (f *watchFlags) openHistory(ctx context.Context, resultsDir string) (*history.Store, error) {
	where, err := f.history.target(resultsDir)
	if err != nil {
		return nil, err
	}
	if where == "" {
		return nil, usagef("watch keeps where it stopped, and what it answered, in the history: not with --no-history")
	}
	if where == filepath.Join(resultsDir, HistoryFile) {
		if err := os.MkdirAll(resultsDir, 0o755); err != nil {
			return nil, err
		}
	}
	return history.Open(ctx, where)
}

// status lists the series the watcher has seen and its outbox.
// env runs the series here (lab run's path), or hands them to the cluster
// --submit names, with the build flags given (and the sandbox a series
// from a list is built in, which the jobs would not infer from a mbox in
// the results folder).
func (f *watchFlags) env(fs *flag.FlagSet, set testbed.Settings, root string, inv invocation, store *history.Store) (watch.Env, error) {
	switch f.submit.V {
	case "":
		if f.shards.IsSet() || f.partition.IsSet() || f.exclusive.IsSet() {
			return nil, usagef("--shards, --partition and --exclusive are --submit slurm's")
		}
		return &labenv.Env{Settings: set, ModuleRoot: root, LabVersion: version.Lab(root), Command: append([]string{"lab"}, inv.raw...), Out: inv.out, History: store}, nil
	case cluster.EngineSlurm:
	default:
		return nil, usagef("--submit %q: lab hands series to slurm", f.submit.V)
	}
	if f.shards.V < 1 {
		return nil, usagef("--shards %d: want 1 or more", f.shards.V)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("lab's own path, for the jobs: %w", err)
	}
	passed := givenOf(fs, func(scratch *flag.FlagSet) { new(testbed.Flags).RegisterFlags(scratch) })
	if set.Sandbox {
		passed = append(slices.DeleteFunc(passed, func(fl cluster.Flag) bool { return fl.Name == "sandbox" }), cluster.Flag{Name: "sandbox", Value: "on"})
	}
	set.CacheDir = absPath(set.CacheDir)
	set.ResultsDir = absPath(set.ResultsDir)
	return &labenv.Slurm{Settings: set, ModuleRoot: root, LabVersion: version.Lab(root), Exe: exe, Flags: passed, Shards: f.shards.V,
		Partition: f.partition.V, Exclusive: f.exclusive.V, Command: cluster.Exec, Out: inv.out, History: store}, nil
}

func (f *watchFlags) status(ctx context.Context, inv invocation) error {
	if len(inv.args) != 1 {
		return usagef("watch status takes no argument: its flags say which history (and --inbox, which inbox)")
	}
	root, err := initramfs.FindModuleRoot(".")
	if err != nil {
		root = "."
	}
	set, err := f.build.Apply(root, nil)
	if err != nil {
		return usageError{err.Error()}
	}
	store, err := f.openHistory(ctx, set.ResultsDir)
	if err != nil {
		return err
	}
	defer store.Close()
	where := ""
	if f.inbox.IsSet() {
		a, err := inbox.Open(f.inbox.V)
		if err != nil {
			return err
		}
		where = a.Path
	}
	list, err := store.WatchSeriesList(ctx, where)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintf(inv.out, "watch: no series seen yet (history %s)\n", store)
		return nil
	}
	for _, w := range list {
		what := w.Why
		if w.State == watch.StateSubmitted {
			what += ", on the cluster: " + w.RunDir
		}
		if w.Reply != "" {
			what += ", reply <" + w.Reply + ">"
		}
		fmt.Fprintf(inv.out, "%-10s %s  %-60.60s  %s\n", w.State, w.Updated.Local().Format("2006-01-02 15:04"), w.Name, what)
	}
	if where != "" {
		// Broken mails, and patch mails no posting took (a second cover
		// letter, a patch number already taken).
		mails, err := store.DroppedWatchMails(ctx, where)
		if err != nil {
			return err
		}
		for _, m := range mails {
			fmt.Fprintf(inv.out, "%-10s %s  %-60.60s  %s\n", "dropped", m.Arrived.Local().Format("2006-01-02 15:04"), m.MessageID, m.Reason)
		}
	}
	out, err := store.Outbox(ctx)
	if err != nil {
		return err
	}
	count := map[string]int{}
	for _, m := range out {
		count[m.State]++
	}
	fmt.Fprintf(inv.out, "outbox: %d sent, %d queued, %d left with the MTA by a stopped watcher\n", count["sent"], count["queued"], count["sending"])
	return nil
}
