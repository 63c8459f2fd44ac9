// Package insnprof is lab's instruction profile under TCG. A QEMU plugin
// of lab's own (plugin/insncount.c, built here with the host's gcc and
// cached like a kernel) counts every guest instruction of each measured
// sample by the translation block it ran in; the agent marks the samples.
// The package reads those counts, names them by kernel function (the
// System.map kept beside each kernel image), and sets two kernels'
// profiles of a benchmark side by side: which functions' instructions per
// operation changed, and how much of the measured change each explains.
package insnprof

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"lab/internal/proc"
)

//go:embed plugin/insncount.c
var pluginSource []byte

//go:embed plugin/qemu-plugin.h
var pluginHeader []byte

// APIVersion is the QEMU plugin API the plugin is written for: QEMU 7.x's
// (Debian 12 ships 7.2), version 1.
const APIVersion = 1

var qemuVersion = regexp.MustCompile(`QEMU emulator version (\d+)\.(\d+)(?:\.(\d+))?`)

// QEMUVersion is the version the QEMU binary qemu reports: "7.2.22".
func QEMUVersion(ctx context.Context, qemu string) (string, error) {
	out, err := exec.CommandContext(ctx, qemu, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", qemu, err)
	}
	g := qemuVersion.FindStringSubmatch(string(out))
	if g == nil {
		return "", fmt.Errorf("%s --version says %q: no version lab can read", qemu, firstLine(string(out)))
	}
	return strings.TrimSuffix(strings.Join(g[1:], "."), "."), nil
}

// Supported says why a QEMU of version v cannot load the plugin, "" when it
// can: the plugin API changed after QEMU 7 (per-vCPU scoreboards, other
// inline ops), and QEMU refuses a plugin of another API version.
func Supported(v string) string {
	major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if major == 7 {
		return ""
	}
	return fmt.Sprintf("QEMU %s: lab's instruction profile plugin is written for the plugin API of QEMU 7.x (version %d), as Debian 12's QEMU 7.2 has it; this QEMU's API differs, so no profile can be taken (the figures do not need one)", v, APIVersion)
}

// Plugin is the path of the plugin built for QEMU binary qemu, building it
// into cacheDir/plugins the first time for this source, QEMU and compiler.
func Plugin(ctx context.Context, cacheDir, qemu string) (string, error) {
	v, err := QEMUVersion(ctx, qemu)
	if err != nil {
		return "", err
	}
	if why := Supported(v); why != "" {
		return "", fmt.Errorf("%s", why)
	}
	cc, err := exec.CommandContext(ctx, "gcc", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("gcc --version: %w (the instruction profile's plugin is built with gcc: apt-get install gcc)", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "qemu=%s\ncc=%s\n", v, firstLine(string(cc)))
	h.Write(pluginSource)
	h.Write(pluginHeader)
	key := hex.EncodeToString(h.Sum(nil))[:24]
	dir := filepath.Join(cacheDir, "plugins")
	so := filepath.Join(dir, "insncount-"+key+".so")
	if _, err := os.Stat(so); err == nil {
		return so, nil
	}
	src, err := os.MkdirTemp("", "lab-insncount-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	for name, data := range map[string][]byte{"insncount.c": pluginSource, "qemu-plugin.h": pluginHeader} {
		if err := os.WriteFile(filepath.Join(src, name), data, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := so + ".tmp"
	var stderr bytes.Buffer
	cmd := proc.Command(ctx, "gcc", "-shared", "-fPIC", "-O2", "-Wall", "-I", src, "-o", tmp, filepath.Join(src, "insncount.c"), "-lpthread")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the instruction profile's QEMU plugin: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return so, os.Rename(tmp, so)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
