package cluster

import (
	"fmt"
	"strings"
	"text/template"
)

// Engines lab plan --emit writes for.
const (
	EngineGitHub = "github"
	EngineK8s    = "k8s"
	EngineSlurm  = "slurm"
)

// Generator is the lab plan command that wrote a template, for its header.
func Generator(req Request, engine string) string {
	cmd := []string{"lab", "plan", req.LabFile, "--shards", fmt.Sprint(req.Shards), "--emit", engine}
	return Line(append(cmd, req.Args...))
}

// templateData is what every template shows.
type templateData struct {
	Lab, LabFile, Generator string
	N                       int
	Shards                  []int
	Plan                    *Plan
	Build, Boot, Merge      string // command lines
	Name                    string // a name for the lab's objects
	Image                   string
}

func data(req Request, engine, shardArg string) (templateData, error) {
	p, err := Make(req)
	if err != nil {
		return templateData{}, err
	}
	d := templateData{Lab: req.Lab.Name, LabFile: req.LabFile, Generator: Generator(req, engine), N: req.Shards, Plan: p,
		Build: Line(req.BuildCommand()), Boot: Line(req.BootCommand(shardArg)), Merge: Line(req.MergeCommand()),
		Name: dnsName("lab-" + req.Lab.Name)}
	for k := 0; k < req.Shards; k++ {
		d.Shards = append(d.Shards, k)
	}
	return d, nil
}

// dnsName makes s a DNS-1123 label: lower case, digits and dashes.
func dnsName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 40 {
		out = strings.TrimRight(out[:40], "-")
	}
	return out
}

func render(name, text string, d any) (string, error) {
	t, err := template.New(name).Funcs(template.FuncMap{"join": strings.Join}).Parse(text)
	if err != nil {
		return "", fmt.Errorf("%s template: %w", name, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("%s template: %w", name, err)
	}
	return b.String(), nil
}

// GitHub is a GitHub Actions workflow for the lab: a build job, a matrix of
// boot shards, a merge job. The runners share nothing, so the build job
// uploads what the boots need (kernels, initramfs, the manifests) as an
// artifact, and each shard uploads its run folder under a name of its own
// (artifacts v4 cannot be overwritten), which the merge job downloads by
// pattern into one folder.
func GitHub(req Request) (string, error) {
	req.Exe, req.Results, req.Cache = "./lab", "results", ""
	d, err := data(req, EngineGitHub, fmt.Sprintf("${{ matrix.shard }}/%d", req.Shards))
	if err != nil {
		return "", err
	}
	return render("github", githubTemplate, d)
}

const githubTemplate = `# lab {{.Lab}} spread over {{.N}} runners, written by:
#   {{.Generator}}
# Copy to .github/workflows/ of a repository that holds lab, its lab files and
# patch series. Three jobs:
# - build: every kernel and initramfs of the run into the cache, uploaded as
#   the artifact lab-built (kernels, initramfs, manifests: what lab run
#   --no-build reads);
# - boot: a matrix of {{.N}} shards; shard K boots its pairs of baseline and
#   patched ({{.Plan.Pairs}} pairs dealt round-robin) from that cache and uploads its run
#   folder, also when a boot failed or the job was cancelled;
# - merge: one run of the shards with every report, when the build succeeded
#   and whatever became of the shards: lab merge names a missing or partial
#   shard in the report. "Re-run failed jobs" reruns a shard under a new
#   artifact name (the attempt is in it); the merge keeps its complete folder.
# Runners with a usable /dev/kvm boot under KVM; elsewhere lab uses TCG.
name: lab shards {{.Lab}}

on:
  workflow_dispatch:

permissions:
  contents: read

jobs:
  build:
    runs-on: ubuntu-24.04
    timeout-minutes: 180
    env:
      LAB_CACHE: ${{"{{"}} github.workspace {{"}}"}}/.lab-cache
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-go@v5
        with:
          go-version-file: go.mod
      - name: Kernel cache (sources, ccache, built kernels)
        uses: actions/cache@v4
        with:
          path: .lab-cache
          key: lab-${{"{{"}} runner.os {{"}}"}}-${{"{{"}} hashFiles('kernel-config/**', 'patches/**') {{"}}"}}
          restore-keys: lab-${{"{{"}} runner.os {{"}}"}}-
      - name: Install what lab needs
        run: ./scripts/install-deps
      - name: Build lab
        run: go build -o lab ./cmd/lab
      - name: Build every kernel and initramfs of the run
        run: {{.Build}}
      - name: Upload what the boots need
        uses: actions/upload-artifact@v4
        with:
          name: lab-built
          path: |
            .lab-cache/kernels
            .lab-cache/initramfs
            .lab-cache/manifests
          retention-days: 1

  boot:
    needs: build
    runs-on: ubuntu-24.04
    timeout-minutes: 360
    strategy:
      fail-fast: false
      matrix:
        shard: [{{range $i, $k := .Shards}}{{if $i}}, {{end}}{{$k}}{{end}}]
    env:
      LAB_CACHE: ${{"{{"}} github.workspace {{"}}"}}/.lab-cache
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-go@v5
        with:
          go-version-file: go.mod
      - name: Let the runner's user open /dev/kvm, when there is one
        run: |
          if [ -e /dev/kvm ]; then
            echo 'KERNEL=="kvm", GROUP="kvm", MODE="0666", OPTIONS+="static_node=kvm"' | sudo tee /etc/udev/rules.d/99-kvm4all.rules
            sudo udevadm control --reload-rules
            sudo udevadm trigger --name-match=kvm
          fi
      - name: Install what lab needs
        run: ./scripts/install-deps
      - name: Build lab
        run: go build -o lab ./cmd/lab
      - name: Fetch the built kernels and initramfs
        uses: actions/download-artifact@v4
        with:
          name: lab-built
          path: .lab-cache
      - name: Boot shard ${{"{{"}} matrix.shard {{"}}"}} of {{.N}}
        run: {{.Boot}}
      - name: Upload the shard's run folder
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: lab-shard-${{"{{"}} matrix.shard {{"}}"}}-attempt-${{"{{"}} github.run_attempt {{"}}"}}
          path: results/shards/
          if-no-files-found: warn

  merge:
    needs: [build, boot]
    if: ${{"{{"}} always() && needs.build.result == 'success' {{"}}"}}
    runs-on: ubuntu-24.04
    timeout-minutes: 30
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-go@v5
        with:
          go-version-file: go.mod
      - name: Build lab
        run: go build -o lab ./cmd/lab
      - name: Fetch every shard's run folder
        uses: actions/download-artifact@v4
        with:
          pattern: lab-shard-*
          merge-multiple: true
          path: results/shards
      - name: Merge the shards into one run, with every report
        run: {{.Merge}}
      - name: Upload the merged run
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: lab-merged-{{.Lab}}
          path: results/merged/
          if-no-files-found: warn
`
