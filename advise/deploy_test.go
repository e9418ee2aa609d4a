package advise

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// decodeManifest converts a YAML document to JSON and decodes it into v,
// refusing fields the Kubernetes type does not have (a misspelt key would
// otherwise be dropped silently by the API server's lenient decoding).
func decodeManifest(t *testing.T, doc map[string]any, v any) {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", doc["kind"], err)
	}
}

// The shipped Indexed Job is well-formed: known fields only, Indexed
// completion mode, one shard per completion, the shard taken from
// JOB_COMPLETION_INDEX, results on the shared claim.
func TestAdviseJobManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "deploy", "kubernetes", "advise-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var job *batchv1.Job
	var pvc *corev1.PersistentVolumeClaim
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch doc["kind"] {
		case "Job":
			job = &batchv1.Job{}
			decodeManifest(t, doc, job)
		case "PersistentVolumeClaim":
			pvc = &corev1.PersistentVolumeClaim{}
			decodeManifest(t, doc, pvc)
		default:
			t.Fatalf("unexpected kind %v", doc["kind"])
		}
	}
	if job == nil || pvc == nil {
		t.Fatal("want a Job and a PersistentVolumeClaim")
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || s.Parallelism == nil {
		t.Fatalf("not an Indexed Job with completions and parallelism: %+v", s)
	}
	pod := s.Template.Spec
	if len(pod.Containers) != 1 || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatalf("pod: %+v", pod)
	}
	c := pod.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if n, err := strconv.Atoi(env["SHARDS"]); err != nil || int32(n) != *s.Completions {
		t.Errorf("SHARDS %q, completions %d: want the same N", env["SHARDS"], *s.Completions)
	}
	cmd := strings.Join(append(c.Command, c.Args...), " ")
	for _, want := range []string{"gpufrag advise $(ARGS)", `--shard "${JOB_COMPLETION_INDEX}/${SHARDS}"`, "--out \"/work/shards/shard-${JOB_COMPLETION_INDEX}.json\""} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command %q lacks %q", cmd, want)
		}
	}
	for _, f := range []string{"--trace /work/", "--model ", "--gpu "} {
		if !strings.Contains(env["ARGS"], f) {
			t.Errorf("ARGS %q lacks %s", env["ARGS"], f)
		}
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/work" || len(pod.Volumes) != 1 ||
		pod.Volumes[0].PersistentVolumeClaim == nil || pod.Volumes[0].PersistentVolumeClaim.ClaimName != pvc.Name {
		t.Errorf("the shards do not write to the claim %s at /work", pvc.Name)
	}
}
