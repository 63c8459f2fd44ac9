package ci

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"lab/internal/cluster"
	"lab/internal/exitcode"
	"lab/internal/spec"
)

// The committed templates are what lab plan --emit writes for
// labs/uprobe-srcu.yaml, byte for byte: they cannot drift from the code.
func TestCommittedShardTemplates(t *testing.T) {
	lab := filepath.Join(t.TempDir(), "lab")
	build := exec.Command("go", "build", "-o", lab, "../cmd/lab")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct{ file, engine string }{
		{"github/shards.yml", cluster.EngineGitHub},
		{"../deploy/kubernetes/uprobe-srcu.yaml", cluster.EngineK8s},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			args := []string{"plan", "labs/uprobe-srcu.yaml", "--shards", "5", "--emit", tc.engine}
			cmd := exec.Command(lab, args...)
			cmd.Dir = ".."
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			want, err := cmd.Output()
			if err != nil {
				t.Fatalf("lab %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
			}
			got, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("ci/%s is not what lab plan writes: regenerate it with\n  go run ./cmd/lab %s -o %s", tc.file, strings.Join(args, " "), filepath.Clean(filepath.Join("ci", tc.file)))
			}
		})
	}
}

// requests are labs and flags the templates must hold up for: one shard,
// many, flags with values, a lab name that is not a DNS label.
func requests(t *testing.T) []cluster.Request {
	t.Helper()
	lab, err := spec.Load("../labs/uprobe-srcu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	odd := *lab
	odd.Name = "My_Lab.v2"
	return []cluster.Request{
		{Lab: lab, LabFile: "labs/uprobe-srcu.yaml", Shards: 1},
		{Lab: lab, LabFile: "labs/uprobe-srcu.yaml", Shards: 5, Args: []string{"--cpus=1", "--duration=1s", "--warmup=0s", "--no-controls"}},
		{Lab: &odd, LabFile: "labs/my lab.yaml", Shards: 3, Args: []string{"--memory=2G"}},
	}
}

// Generated workflows pass actionlint, for every request.
func TestGeneratedWorkflows(t *testing.T) {
	for i, req := range requests(t) {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			text, err := cluster.GitHub(req)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			errs, err := l.Lint("shards.yml", []byte(text), nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Errorf("%s", e.Error())
			}
			for _, w := range []string{"merge-multiple: true", "pattern: lab-shard-*", fmt.Sprintf("/%d\" --no-build", req.Shards), "always()"} {
				if !strings.Contains(text, w) {
					t.Errorf("workflow lacks %q", w)
				}
			}
		})
	}
}

// Every Kubernetes template decodes strictly (an unknown or misspelt field
// fails) into k8s.io/api types, and has what a sharded run needs.
func TestKubernetesManifests(t *testing.T) {
	files, _ := filepath.Glob("../deploy/kubernetes/*.yaml")
	if len(files) == 0 {
		t.Fatal("no manifests under deploy/kubernetes")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(f), func(t *testing.T) { checkManifests(t, string(data), 5) })
	}
	for i, req := range requests(t) {
		t.Run(fmt.Sprint("generated-", i), func(t *testing.T) {
			text, err := cluster.Kubernetes(req, "registry.example/lab:1")
			if err != nil {
				t.Fatal(err)
			}
			checkManifests(t, text, req.Shards)
		})
	}
}

// objects are a manifest's objects by unit label.
type objects struct {
	claims []corev1.PersistentVolumeClaim
	jobs   map[string]batchv1.Job
}

func decode(t *testing.T, text string) objects {
	t.Helper()
	o := objects{jobs: map[string]batchv1.Job{}}
	for i, doc := range strings.Split(text, "\n---\n") {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		switch meta.Kind {
		case "PersistentVolumeClaim":
			var c corev1.PersistentVolumeClaim
			if err := yaml.UnmarshalStrict([]byte(doc), &c); err != nil {
				t.Fatalf("document %d (%s): %v", i, meta.Kind, err)
			}
			o.claims = append(o.claims, c)
		case "Job":
			var j batchv1.Job
			if err := yaml.UnmarshalStrict([]byte(doc), &j); err != nil {
				t.Fatalf("document %d (%s): %v", i, meta.Kind, err)
			}
			o.jobs[j.Labels["lab/unit"]] = j
		default:
			t.Fatalf("document %d: kind %q (%s)", i, meta.Kind, meta.APIVersion)
		}
	}
	return o
}

func checkManifests(t *testing.T, text string, n int) {
	o := decode(t, text)
	if len(o.claims) != 1 || len(o.jobs) != 3 {
		t.Fatalf("%d claims, jobs %v: want a claim and build, shards, merge", len(o.claims), len(o.jobs))
	}
	claim := o.claims[0].Name
	for unit, j := range o.jobs {
		for _, e := range validation.IsDNS1123Label(j.Name) {
			t.Errorf("job %s: %s", j.Name, e)
		}
		spec := j.Spec.Template.Spec
		if spec.RestartPolicy != corev1.RestartPolicyNever || len(spec.Containers) != 1 || len(spec.Volumes) != 1 ||
			spec.Volumes[0].PersistentVolumeClaim == nil || spec.Volumes[0].PersistentVolumeClaim.ClaimName != claim {
			t.Errorf("%s: pod spec %+v", unit, spec)
		}
		c := spec.Containers[0]
		if line := strings.Join(append(c.Command, c.Args...), " "); !strings.Contains(line, "exec lab "+map[string]string{"build": "build", "shards": "run", "merge": "merge"}[unit]+" ") {
			t.Errorf("%s runs %q", unit, line)
		}
	}
	shards := o.jobs["shards"]
	s := shards.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || int(*s.Completions) != n ||
		s.Parallelism == nil || int(*s.Parallelism) != n || s.BackoffLimitPerIndex == nil || s.PodFailurePolicy == nil {
		t.Errorf("shards job spec %+v", s)
	}
	checkFailurePolicy(t, s.PodFailurePolicy)
	c := s.Template.Spec.Containers[0]
	if !strings.Contains(strings.Join(c.Args, " "), fmt.Sprintf(`--shard "$JOB_COMPLETION_INDEX/%d" --no-build`, n)) {
		t.Errorf("shard pods do not take K from JOB_COMPLETION_INDEX: %q", c.Args)
	}
	if q, ok := c.Resources.Limits["devices.kubevirt.io/kvm"]; !ok || q.Value() != 1 {
		t.Errorf("shard pods ask for no /dev/kvm: %v", c.Resources.Limits)
	}
}

// The shards' pod failure policy is the exit-code table's: a pod the
// cluster evicts does not count, the codes of lab run that a rerun would
// not change (the kernel or the lab failed) fail the index, and those a
// rerun may change (QEMU, the node, a signal) are retried.
func checkFailurePolicy(t *testing.T, p *batchv1.PodFailurePolicy) {
	t.Helper()
	if p == nil {
		return
	}
	want := []struct {
		action batchv1.PodFailurePolicyAction
		codes  []exitcode.Code
	}{
		{batchv1.PodFailurePolicyActionIgnore, nil},
		{batchv1.PodFailurePolicyActionFailIndex, exitcode.Codes("run", exitcode.Futile)},
		{batchv1.PodFailurePolicyActionCount, exitcode.Codes("run", exitcode.MayHelp)},
	}
	if len(p.Rules) != len(want) {
		t.Fatalf("pod failure policy: %d rules, want %d: %+v", len(p.Rules), len(want), p.Rules)
	}
	for i, r := range p.Rules {
		w := want[i]
		if r.Action != w.action {
			t.Errorf("rule %d: %s, want %s", i, r.Action, w.action)
		}
		if w.codes == nil {
			if r.OnExitCodes != nil || len(r.OnPodConditions) != 1 || r.OnPodConditions[0].Type != corev1.DisruptionTarget {
				t.Errorf("rule %d (%s): %+v, want on the DisruptionTarget condition", i, r.Action, r)
			}
			continue
		}
		var got []exitcode.Code
		if r.OnExitCodes != nil {
			for _, v := range r.OnExitCodes.Values {
				got = append(got, exitcode.Code(v))
			}
		}
		if r.OnExitCodes == nil || r.OnExitCodes.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn ||
			r.OnExitCodes.ContainerName == nil || *r.OnExitCodes.ContainerName != "lab" || !slices.Equal(got, w.codes) {
			t.Errorf("rule %d (%s): exit codes %v of %+v, want %v (lab help exit-codes)", i, r.Action, got, r.OnExitCodes, w.codes)
		}
	}
}
