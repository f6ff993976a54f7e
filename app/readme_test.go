package app

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestConfigReference: docs/configuration.md describes every variable the
// configuration reads, and no other.
func TestConfigReference(t *testing.T) {
	read := map[string]bool{}
	ConfigFromEnv(func(name string) string {
		read[name] = true
		return ""
	})
	b, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		first, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		if !strings.HasPrefix(line, "| `") || !ok {
			continue
		}
		for _, v := range regexp.MustCompile("`([A-Z][A-Z0-9_]+)`").FindAllStringSubmatch(first, -1) {
			documented[v[1]] = true
		}
	}
	localOnly := map[string]bool{"PORT": true} // read by cmd/server
	for name := range read {
		if !documented[name] {
			t.Errorf("docs/configuration.md does not describe %s", name)
		}
	}
	for name := range documented {
		if !read[name] && !localOnly[name] {
			t.Errorf("docs/configuration.md describes %s, which nothing reads", name)
		}
	}
	if len(read) < 20 {
		t.Fatalf("the configuration read %d variables", len(read))
	}
}
