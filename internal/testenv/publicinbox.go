package testenv

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// PublicInbox is a real public-inbox v2 inbox made by Debian's public-inbox
// tools in a temp folder: what lore.kernel.org serves and what a
// `git clone --mirror` of a list's epochs holds.
type PublicInbox struct {
	Dir     string // the inbox: git/0.git, ...
	Address string // the list's address
	env     []string
}

// NewPublicInbox makes an empty v2 inbox with public-inbox-init -V2, its
// configuration in the temp folder, not the user's.
func NewPublicInbox(t testing.TB) *PublicInbox {
	t.Helper()
	for _, tool := range []string{"public-inbox-init", "public-inbox-mda", "public-inbox-learn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: Debian's public-inbox package makes the test inboxes (./scripts/install-deps --test)", tool)
		}
	}
	home := t.TempDir()
	pi := &PublicInbox{Dir: filepath.Join(home, "inbox"), Address: "test-list@example.org",
		env: append(os.Environ(), "HOME="+home, "PI_CONFIG="+filepath.Join(home, "pi-config"), "ORIGINAL_RECIPIENT=test-list@example.org")}
	pi.run(t, nil, "public-inbox-init", "-V2", "test-list", pi.Dir, "http://example.org/test-list", pi.Address)
	// Mail is delivered as a list's own archive takes it, without
	// SpamAssassin (which the test machine does not run).
	pi.run(t, nil, "git", "config", "-f", filepath.Join(home, "pi-config"), "publicinboxmda.spamcheck", "none")
	pi.run(t, nil, "git", "config", "-f", filepath.Join(home, "pi-config"), "publicinboxlearn.spamcheck", "none")
	return pi
}

// Deliver adds a mail to the inbox as the list's MTA does (public-inbox-mda).
func (pi *PublicInbox) Deliver(t testing.TB, mail []byte) {
	t.Helper()
	pi.run(t, mail, "public-inbox-mda", "--no-precheck")
}

// Remove takes a mail out of the inbox as its administrator does
// (public-inbox-learn rm): a commit whose tree holds the mail as file d.
func (pi *PublicInbox) Remove(t testing.TB, mail []byte) {
	t.Helper()
	pi.run(t, mail, "public-inbox-learn", "rm")
}

func (pi *PublicInbox) run(t testing.TB, stdin []byte, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = pi.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// Env is the environment the inbox's tools run in (its own configuration).
func (pi *PublicInbox) Env() []string { return pi.env }
