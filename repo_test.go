package chatmemory

import (
	"os"
	"strings"
	"testing"
)

// TestRepository: no built binary or data dump is tracked (nothing over
// 1 MiB), and the code is licensed under Apache-2.0, as README says.
func TestRepository(t *testing.T) {
	for _, f := range tracked(t) {
		if st, err := os.Stat(f); err == nil && st.Size() > 1<<20 {
			t.Errorf("%s is tracked and %d bytes: a built binary or a dump? Remove it and ignore it", f, st.Size())
		}
	}
	license, err := os.ReadFile("LICENSE")
	if err != nil || !strings.Contains(string(license), "Apache License") || !strings.Contains(string(license), "Version 2.0") {
		t.Errorf("LICENSE is not Apache-2.0: %v", err)
	}
	readme, _ := os.ReadFile("README.md")
	if !strings.Contains(string(readme), "Apache-2.0") {
		t.Error("README does not name the license")
	}
}
