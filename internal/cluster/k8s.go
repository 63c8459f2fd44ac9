package cluster

import (
	"fmt"

	"lab/internal/exitcode"
)

// DefaultImage is the container image the Kubernetes template names until
// told otherwise (lab plan --image); deploy/container/build builds it and
// reads its name from here. "localhost/" keeps the name a node-loaded
// image's everywhere: podman names a local image so, and containerd, given
// a bare "lab:latest", would look for Docker Hub's docker.io/library/lab.
const DefaultImage = "localhost/lab:latest"

// ImageOrDefault is image, or DefaultImage when none was given.
func ImageOrDefault(image string) string {
	if image == "" {
		return DefaultImage
	}
	return image
}

// Kubernetes is the lab's run as Kubernetes objects: a volume claim shared
// by every pod (the kernel cache and the run folders), a build Job, an
// Indexed Job with one pod per shard (K is the pod's completion index) and a
// merge Job. Kubernetes orders no Jobs, so the header says how to apply
// them one after the other (kubectl apply -l lab/unit=...).
func Kubernetes(req Request, image string) (string, error) {
	req.Exe, req.Results, req.Cache = "lab", fmt.Sprintf("/results/%s/run-$LAB_RUN", req.Lab.Name), ""
	d, err := data(req, EngineK8s, fmt.Sprintf("$JOB_COMPLETION_INDEX/%d", req.Shards))
	if err != nil {
		return "", err
	}
	d.Image = ImageOrDefault(image)
	return render("k8s", k8sTemplate, k8sData{templateData: d,
		FailIndex: exitcode.Codes("run", exitcode.Futile), Retry: exitcode.Codes("run", exitcode.MayHelp)})
}

// k8sData is what the Kubernetes template shows besides the common data:
// the exit codes of a shard's lab run, from the exit-code table, on which
// the pod failure policy fails the index (the kernel or the lab failed:
// it would fail again) or retries it (QEMU, the node, a signal).
type k8sData struct {
	templateData
	FailIndex, Retry []exitcode.Code
}

// k8sPod is one Job and its pod: every Job runs lab in the same container on the
// shared claim; they differ in the command, the resources, whether the
// kernel cache is mounted and whether pods keep a node each.
type k8sPod struct {
	Job, Unit, Image, Command string
	Pull                      string // imagePullPolicy; "" for Kubernetes' default
	CPU, Memory               string // requests; "" for none
	KVM                       bool   // a /dev/kvm from KubeVirt's device plugin
	Cache                     bool   // the kernel cache at /cache
	OnePerNode                bool   // wall-clock boots must not share a node
}

// Pod is the build, shards or merge Job and its pod.
func (d k8sData) Pod(unit string) k8sPod {
	p := k8sPod{Job: d.Name + "-" + unit, Unit: unit, Image: d.Image, Cache: true}
	if NodeLoaded(d.Image) {
		// Pulled, it would be Docker Hub's: a clear ErrImageNeverPull
		// instead of a pull of someone else's image or an access error.
		p.Pull = "Never"
	}
	switch unit {
	case "build":
		p.Command, p.CPU, p.Memory = d.Build, "4", "8Gi"
	case "shards":
		p.Command, p.CPU, p.Memory, p.KVM, p.OnePerNode = d.Boot, "2", "4Gi", true, true
	case "merge":
		p.Command, p.Cache = d.Merge, false
	}
	return p
}

// Builder is the script that builds the image.
func (k8sData) Builder() string { return ImageBuilder }

// NodeLoaded reports whether the image must be on the nodes already.
func (d k8sData) NodeLoaded() bool { return NodeLoaded(d.Image) }

// Codes are codes as a YAML flow list's items: 1, 2.
func (k8sData) Codes(codes []exitcode.Code) string { return exitcode.List(codes, "") }

// Either is codes as words: 5, 130 or 143.
func (k8sData) Either(codes []exitcode.Code) string { return exitcode.List(codes, "or") }

const k8sTemplate = `{{define "job"}}apiVersion: batch/v1
kind: Job
metadata:
  name: {{.Job}}
  labels:
    app.kubernetes.io/name: lab
    lab/unit: {{.Unit}}
spec:
{{- end -}}
{{define "pod"}}  template:
    metadata:
      labels:
        app.kubernetes.io/name: lab
        lab/unit: {{.Unit}}
    spec:
      restartPolicy: Never
{{- if .OnePerNode}}
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector:
                matchLabels:
                  lab/unit: {{.Unit}}
{{- end}}
      containers:
        - name: lab
          image: {{.Image}}
{{- if .Pull}}
          imagePullPolicy: {{.Pull}}
{{- end}}
          workingDir: /lab
          command: ["/bin/sh", "-c"]
          args:
            - |
              exec {{.Command}}
          env:
            - name: LAB_RUN
              value: "1"
{{- if .Cache}}
            - name: LAB_CACHE
              value: /cache
{{- end}}
{{- if .CPU}}
          resources:
            requests:
              cpu: "{{.CPU}}"
              memory: {{.Memory}}
{{- if .KVM}}
            limits:
              devices.kubevirt.io/kvm: "1"
{{- end}}
{{- end}}
          volumeMounts:
{{- if .Cache}}
            - name: shared
              mountPath: /cache
              subPath: cache
{{- end}}
            - name: shared
              mountPath: /results
              subPath: results
      volumes:
        - name: shared
          persistentVolumeClaim:
            claimName: lab-cache
{{- end -}}
# lab {{.Lab}} on Kubernetes, {{.N}} boot shards, written by:
#   {{.Generator}}
# The image ({{.Image}}) holds lab's checkout in /lab with lab on
# the PATH and what ./scripts/install-deps installs; {{.Builder}}
# builds it from Debian packages (its /etc/lab-image.json says what it holds).
{{- if .NodeLoaded}}
# Its name has no registry, so pods never pull it (imagePullPolicy: Never):
# load it onto every node (podman save {{.Image}} |
# ctr -n k8s.io images import -), or push it to a registry and write this
# file again with lab plan --image REGISTRY/NAME:TAG.
{{- end}}
# Pods share the claim lab-cache (ReadWriteMany): /cache holds the kernels
# the build Job makes, /results the run folders.
# LAB_RUN names this run's folder: change it for the next run.
# Kubernetes does not order Jobs; apply them one after the other:
#   kubectl apply -f FILE -l lab/unit=cache
#   kubectl apply -f FILE -l lab/unit=build
#   kubectl wait --for=condition=complete --timeout=3h job/{{.Name}}-build
#   kubectl apply -f FILE -l lab/unit=shards
#   until kubectl get job/{{.Name}}-shards -o jsonpath='{.status.conditions[?(@.status=="True")].type}' | grep -qE 'Complete|Failed'; do sleep 30; done
#   kubectl apply -f FILE -l lab/unit=merge
# The merge runs whatever became of the shards: lab merge names a missing or
# partial shard in the report. A shard that exits {{.Either .Retry}} (QEMU or the
# node failed, or a signal stopped it) is retried once: a new pod of the same
# index writes a new folder, and the merge keeps the complete one. One that
# exits {{.Either .FailIndex}} (the kernel or the lab failed) would fail again:
# its index fails. A pod the cluster evicts is retried without counting.
# (lab help exit-codes says what each code means.)
# /dev/kvm comes from KubeVirt's device plugin (devices.kubevirt.io/kvm); on
# a cluster without it, drop that limit and set securityContext.privileged:
# true with a hostPath volume for /dev/kvm, or let lab use TCG. The
# anti-affinity puts one shard per node, so that wall-clock figures are not
# two guests measuring each other.
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: lab-cache
  labels:
    app.kubernetes.io/name: lab
    lab/unit: cache
spec:
  accessModes: ["ReadWriteMany"]
  resources:
    requests:
      storage: 20Gi
---
{{template "job" (.Pod "build")}}
  backoffLimit: 1
{{template "pod" (.Pod "build")}}
---
{{template "job" (.Pod "shards")}}
  completionMode: Indexed
  completions: {{.N}}
  parallelism: {{.N}}
  backoffLimitPerIndex: 1
  podFailurePolicy:
    rules:
      - action: Ignore
        onPodConditions:
          - type: DisruptionTarget
      - action: FailIndex
        onExitCodes:
          containerName: lab
          operator: In
          values: [{{.Codes .FailIndex}}]
      - action: Count
        onExitCodes:
          containerName: lab
          operator: In
          values: [{{.Codes .Retry}}]
{{template "pod" (.Pod "shards")}}
---
{{template "job" (.Pod "merge")}}
  backoffLimit: 0
{{template "pod" (.Pod "merge")}}
`
