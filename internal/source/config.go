package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"lab/internal/digest"
	"lab/internal/gitcmd"
	"lab/internal/kconfig"
	"lab/internal/proc"
)

// CheckConfig finds, before the source is extracted or checked out, the
// fragments' options that it does not define: a typo fails in seconds, not
// after the extraction and the import into git. An option in lab's list of
// known symbols (kconfig.Known) passes at once; any other is looked for in
// the source's own Kconfig files: read from the tarball's stream (no file
// written) or with git grep at the base. A tarball already extracted into
// the cache is left to the check of the tree (kconfig.CheckSymbols), which
// reads it in a second.
func CheckConfig(ctx context.Context, o Origin, cacheDir string, fragments []string) error {
	unlisted, err := kconfig.Unlisted(fragments)
	if err != nil || len(unlisted) == 0 {
		return err
	}
	var text []byte
	var where string
	if o.Git != "" {
		base := o.Base
		if base == "" {
			base = "HEAD"
		}
		where = fmt.Sprintf("%s at %s", o.Git, base)
		text, err = (&gitcmd.Git{Dir: o.Git}).Command(ctx, "grep", "-h", "-I", "-E", `^[[:space:]]*(menu)?config[[:space:]]`, base, "--", ":(glob)**/Kconfig*").Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			err = nil // nothing matched: no option is defined
		}
	} else {
		if extracted(cacheDir, o.Tarball) {
			return nil
		}
		where = o.Tarball + " (its Kconfig files, read before extracting it)"
		text, err = proc.Command(ctx, "tar", "-xOf", o.Tarball, "--wildcards", "*/Kconfig*").Output()
	}
	if err != nil {
		return fmt.Errorf("read the Kconfig files of %s: %w", where, err)
	}
	defined, err := kconfig.DefinedIn(bytes.NewReader(text))
	if err != nil {
		return err
	}
	known, err := kconfig.Known()
	if err != nil {
		return err
	}
	maps.Copy(known, defined) // a typo's likely meaning, from either
	return kconfig.Undefined(where, unlisted, defined, known)
}

// CheckSymbols says which options of fragments the base commit's Kconfig
// files do not define, naming each one's fragment and line (and a likely
// meaning): read with git grep from git's objects, so that it needs
// neither the work tree's lock nor the commit checked out.
func (t *Tree) CheckSymbols(ctx context.Context, fragments []string) error {
	var opts []kconfig.Option
	for _, f := range fragments {
		o, err := kconfig.ParseFragment(f)
		if err != nil {
			return err
		}
		opts = append(opts, o...)
	}
	text, err := t.git.Command(ctx, "grep", "-h", "-I", "-E", `^[[:space:]]*(menu)?config[[:space:]]`, t.BaseHash, "--", ":(glob)**/Kconfig*").Output()
	if err != nil {
		return fmt.Errorf("read the Kconfig files of %s in %s: %w", gitShort(t.BaseHash), t.Dir, err)
	}
	defined, err := kconfig.DefinedIn(bytes.NewReader(text))
	if err != nil {
		return err
	}
	if len(defined) == 0 {
		return fmt.Errorf("%s: no Kconfig files at %s: not a kernel source tree", t.Dir, gitShort(t.BaseHash))
	}
	return kconfig.Undefined("the source in "+t.Dir, opts, defined, defined)
}

// extracted says whether the tarball's tree is complete in the cache.
func extracted(cacheDir, tarball string) bool {
	sum, err := digest.File(tarball)
	if err != nil {
		return false
	}
	data, err := os.ReadFile(filepath.Join(cacheDir, "src", "tarball-"+sum[:12]+".json"))
	var inf info
	return err == nil && json.Unmarshal(data, &inf) == nil && strings.TrimSpace(inf.Commit) != ""
}
