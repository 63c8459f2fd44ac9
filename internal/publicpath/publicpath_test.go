package publicpath

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"-kernel /root/.cache/lab/kernels/k/bzImage -append 'x'", []string{"/root/.cache/lab/kernels/k/bzImage"}},
		{`"console":"/tmp/lab-1/boots/01/console.log","dir":"/home/ann/r"`, []string{"/tmp/lab-1/boots/01/console.log", "/home/ann/r"}},
		{"path=/work/main,security_model=none and path=/work/main,x", []string{"/work/main"}},
		{"--results /srv/runs`", []string{"/srv/runs"}},
		// What every reader's machine has, or what is named already.
		{"/usr/bin/qemu-system-x86_64 /usr/src/linux-source-6.12.tar.xz /dev/kvm /proc/cpuinfo", nil},
		{"$LAB_CACHE/kernels/k $TMPDIR/lab-qmp-1/qmp.sock ~/notes results/uprobe-srcu/1/lab.yaml", nil},
		{"kernel/events/uprobes.c arch/x86/kernel/uprobes.c", nil},
	} {
		if got := Find([]byte(tc.text)); !slices.Equal(got, tc.want) {
			t.Errorf("Find(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// A folder inside another is named by its own; a whole path is named also
// bare; a folder is not named where it is only part of a word.
func TestNames(t *testing.T) {
	var n Names
	n.Folder("/tmp", "$TMPDIR")
	n.Folder("/tmp/exo/results", "results")
	n.Whole("/work/lab", ".")
	got := n.Replacer().Replace("/tmp/exo/results/a/lab.yaml /tmp/x /tmpfile path=/work/lab,ro /work/lab/labs/l.yaml")
	if want := "results/a/lab.yaml $TMPDIR/x /tmpfile path=.,ro ./labs/l.yaml"; got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestCopy(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	os.MkdirAll(filepath.Join(src, "boots", "01"), 0o755)
	os.WriteFile(filepath.Join(src, "results.json"), []byte(`{"image":"/root/.cache/lab/kernels/k/bzImage"}`), 0o644)
	os.WriteFile(filepath.Join(src, "boots", "01", "blob"), []byte("\x00/root/.cache/lab/x"), 0o644)
	var n Names
	n.Folder("/root/.cache/lab", "$LAB_CACHE")
	if err := Copy(src, dst, n.Replacer()); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dst, "results.json")); string(data) != `{"image":"$LAB_CACHE/kernels/k/bzImage"}` {
		t.Errorf("results.json: %s", data)
	}
	if data, _ := os.ReadFile(filepath.Join(dst, "boots", "01", "blob")); string(data) != "\x00/root/.cache/lab/x" {
		t.Errorf("a binary file was rewritten: %q", data)
	}
	if err := Copy(src, dst, n.Replacer()); err == nil || !strings.Contains(err.Error(), "overwrites nothing") {
		t.Errorf("a second copy over the first: %v", err)
	}
}

// No committed example, report or mail names a folder of the machine that
// made it (lab export makes an example of a run; docs/running.md).
func TestExamplesNameNoMachinePath(t *testing.T) {
	root := "../../results/examples"
	var files int
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if found := Find(data); len(found) > 0 {
			t.Errorf("%s names folders of the machine that made it: %q (lab export --as FOLDER=NAME names them)", path, found[:min(len(found), 5)])
		}
		return nil
	})
	if err != nil || files < 100 {
		t.Fatalf("read %d files of %s: %v", files, root, err)
	}
}
