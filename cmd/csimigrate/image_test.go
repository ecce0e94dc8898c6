package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The controller's image has one name everywhere: the release builds it
// (.goreleaser.yaml), the kustomize base runs it, the Dockerfiles' build
// commands and the docs tag it.
func TestOneImageName(t *testing.T) {
	b, err := os.ReadFile("../../.goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rel struct {
		Dockers []struct {
			Images []string `json:"images"`
		} `json:"dockers_v2"`
	}
	if err := yaml.Unmarshal(b, &rel); err != nil {
		t.Fatal(err)
	}
	if len(rel.Dockers) != 1 || len(rel.Dockers[0].Images) != 1 {
		t.Fatalf(".goreleaser.yaml: images %+v, want one image", rel.Dockers)
	}
	want := rel.Dockers[0].Images[0]
	refs := map[string][]string{} // where -> image names
	for _, u := range manifestDocs(t) {
		if u.GetKind() != "Deployment" {
			continue
		}
		ctrs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		for _, c := range ctrs {
			img, _ := c.(map[string]any)["image"].(string)
			name, _, _ := strings.Cut(img, ":")
			refs["the kustomize base"] = append(refs["the kustomize base"], name)
		}
	}
	tagged := regexp.MustCompile(`(?:-t |set image )([a-z0-9./-]+)[:=]`)
	for _, f := range []string{"Dockerfile", "Dockerfile.release", "deploy/base/kustomization.yaml", "../../README.md", "../../docs/controller.md"} {
		b, err := os.ReadFile(filepath.FromSlash(f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range tagged.FindAllStringSubmatch(string(b), -1) {
			refs[f] = append(refs[f], m[1])
		}
	}
	if len(refs["the kustomize base"]) == 0 || len(refs["Dockerfile"]) == 0 || len(refs["../../README.md"]) == 0 {
		t.Fatalf("image references found: %v: want the base, the Dockerfile and the README to name the image", refs)
	}
	for where, names := range refs {
		for _, n := range names {
			if n != want {
				t.Errorf("%s names image %q; the release builds %q", where, n, want)
			}
		}
	}
}
