package live

import (
	"io"
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestRBACManifest keeps the shipped ClusterRole in step with what Load
// lists and what AccessError tells the user to apply.
func TestRBACManifest(t *testing.T) {
	const path = "../../../deploy/kubernetes/gpufrag-inspect-rbac.yaml"
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	kinds := map[string]int{}
	for {
		var doc struct {
			Kind  string `yaml:"kind"`
			Rules []struct {
				APIGroups []string `yaml:"apiGroups"`
				Resources []string `yaml:"resources"`
				Verbs     []string `yaml:"verbs"`
			} `yaml:"rules"`
			RoleRef struct {
				Name string `yaml:"name"`
			} `yaml:"roleRef"`
		}
		if err := dec.Decode(&doc); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		kinds[doc.Kind]++
		if doc.Kind == "ClusterRoleBinding" && doc.RoleRef.Name != "gpufrag-inspect" {
			t.Errorf("binding refers to %q", doc.RoleRef.Name)
		}
		if doc.Kind != "ClusterRole" {
			continue
		}
		for _, res := range []string{"nodes", "pods"} {
			for _, verb := range []string{"get", "list"} {
				ok := false
				for _, r := range doc.Rules {
					ok = ok || (slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, res) && slices.Contains(r.Verbs, verb))
				}
				if !ok {
					t.Errorf("ClusterRole lacks %s %s", verb, res)
				}
			}
		}
		for _, r := range doc.Rules {
			for _, v := range r.Verbs {
				if v != "get" && v != "list" {
					t.Errorf("ClusterRole grants %q: inspect only reads", v)
				}
			}
		}
	}
	if kinds["ClusterRole"] != 1 || kinds["ClusterRoleBinding"] != 1 {
		t.Errorf("kinds %v: want one ClusterRole and one ClusterRoleBinding", kinds)
	}
}
