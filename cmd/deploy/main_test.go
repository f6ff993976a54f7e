package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root runs the test from the repository's root, where the command runs.
func root(t *testing.T) {
	t.Helper()
	wd, _ := os.Getwd()
	t.Chdir(filepath.Join(wd, "..", ".."))
}

// entryPoints are the functions function.go registers: name → kind.
func entryPoints(t *testing.T) map[string]string {
	src, err := os.ReadFile("function.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`ff\.(HTTP|CloudEvent)\("([^"]+)"`).FindAllStringSubmatch(string(src), -1) {
		out[m[2]] = m[1]
	}
	if len(out) == 0 {
		t.Fatal("no entry points in function.go")
	}
	return out
}

// TestDeployPlan: the dry run prints every step and runs nothing; it
// deploys each entry point function.go registers, HTTP ones on HTTP and
// CloudEvent ones on the topic the scheduler job publishes to, in the
// region firebase.json's rewrites name, with the timeouts and secrets a
// turn needs; the Makefile's deploy target passes every variable the
// command reads.
func TestDeployPlan(t *testing.T) {
	root(t)
	env := map[string]string{"PROJECT": "my-proj", "DRY_RUN": "1", "TIME_ZONE": "Europe/Oslo"}
	var out, errOut bytes.Buffer
	ran := 0
	count := func(context.Context, []string) error { ran++; return nil }
	if code := run(context.Background(), func(k string) string { return env[k] }, &out, &errOut, count, count); code != 0 || ran != 0 {
		t.Fatalf("dry run: exit %d, %d commands run, %s", code, ran, errOut.String())
	}
	printed := out.String()
	t.Log(printed)
	deployed := map[string]string{} // function → its deploy line
	for _, l := range strings.Split(printed, "\n") {
		if m := regexp.MustCompile(`^gcloud functions deploy (\S+) `).FindStringSubmatch(l); m != nil {
			deployed[m[1]] = l
		}
	}
	regions, err := rewriteRegions("firebase.json")
	if err != nil || len(regions) == 0 {
		t.Fatalf("firebase.json: %v %v", regions, err)
	}
	eps := entryPoints(t)
	for name, kind := range eps {
		l, ok := deployed[name]
		if !ok {
			t.Errorf("function.go registers %s, the plan does not deploy it", name)
			continue
		}
		gen := "--gen2"
		if name == userDeletedFunction {
			gen = "--no-gen2" // the only generation Auth's events reach
		}
		for _, want := range []string{"--entry-point=" + name, "--region=" + regions[0], "--project=my-proj", " " + gen + " ",
			"--set-secrets=OPENAI_API_KEY=openai-api-key:latest,ID_SECRET=" + idSecret + ":latest"} {
			if !strings.Contains(l, want) {
				t.Errorf("%s: %q lacks %s", name, l, want)
			}
		}
		switch kind {
		case "HTTP":
			if !strings.Contains(l, "--trigger-http") || !strings.Contains(l, "--timeout=300s") || !strings.Contains(l, "--concurrency=80") {
				t.Errorf("HTTP function %s: %s", name, l)
			}
		case "CloudEvent":
			if name == userDeletedFunction {
				if !strings.Contains(l, "--trigger-event="+userDeletedEvent) || !strings.Contains(l, "--trigger-resource=my-proj") || !strings.Contains(l, "--retry") {
					t.Errorf("the user-deleted function: %s", l)
				}
			} else if name == afterTurnFunction {
				for _, want := range []string{"--trigger-event-filters=type=" + jobCreatedEvent, "'--trigger-event-filters=database=(default)'",
					"'--trigger-event-filters-path-pattern=document=chat_sessions/{session}/jobs/{job}'", "--retry"} {
					if !strings.Contains(l, want) {
						t.Errorf("the after-turn function: %q lacks %s", l, want)
					}
				}
			} else if !strings.Contains(l, "--trigger-topic="+sweepTopic) {
				t.Errorf("CloudEvent function %s: %s", name, l)
			}
		}
	}
	for name := range deployed {
		if eps[name] == "" {
			t.Errorf("the plan deploys %s, which function.go does not register", name)
		}
	}
	for _, want := range []string{
		"gcloud pubsub topics describe " + sweepTopic + " --project=my-proj || gcloud pubsub topics create " + sweepTopic,
		"--topic=" + sweepTopic, "'--schedule=0 3 * * *'", "--time-zone=Europe/Oslo", "--location=" + regions[0],
		"firebase deploy --only firestore:rules,firestore:indexes", "firebase deploy --only hosting", "npm run --silent build:web",
		"gcloud services enable",
		"gcloud secrets describe " + idSecret + " --project=my-proj || sh -c",
		"ID_SECRET=" + idSecret + ":latest",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("the plan lacks %q", want)
		}
	}

	// The Makefile passes exactly what the command reads.
	var read []string
	settingsFrom(func(k string) string { read = append(read, k); return "" })
	read = append(read, "DRY_RUN")
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?s)\ndeploy: deps\n(.*?)\n\n|\ndeploy: deps\n(.*)$`).FindStringSubmatch(string(mk))
	if recipe == nil {
		t.Fatal("no deploy target in the Makefile")
	}
	passed := regexp.MustCompile(`(\w+)='\$\((\w+)\)'`).FindAllStringSubmatch(recipe[0], -1)
	var names []string
	for _, p := range passed {
		if p[1] != p[2] {
			t.Errorf("the Makefile passes $(%s) as %s", p[2], p[1])
		}
		names = append(names, p[1])
	}
	slices.Sort(read)
	slices.Sort(names)
	if !slices.Equal(read, names) {
		t.Errorf("the command reads %v, the Makefile passes %v", read, names)
	}
}

// TestDeployRuns: a real run checks before it creates (a topic or job that
// exists is left or updated), stops at the first failure saying which step
// to fix, and refuses a missing project or a region firebase.json does not
// rewrite to.
func TestDeployRuns(t *testing.T) {
	root(t)
	if _, err := os.Stat("web/public/config.json"); err != nil {
		if err := os.WriteFile("web/public/config.json", []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("web/public/config.json") })
	}
	env := map[string]string{"PROJECT": "p"}
	getenv := func(k string) string { return env[k] }
	var ran []string
	exists := map[string]bool{"pubsub": true} // the topic exists; the job does not
	exec := func(_ context.Context, argv []string) error { ran = append(ran, strings.Join(argv, " ")); return nil }
	check := func(_ context.Context, argv []string) error {
		if exists[argv[1]] {
			return nil
		}
		return errors.New("not found")
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), getenv, &out, &errOut, exec, check); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	joined := strings.Join(ran, "\n")
	if strings.Contains(joined, "topics create") || !strings.Contains(joined, "scheduler jobs create") || len(ran) != 10 { // nine steps and the after-turn function
		t.Fatalf("ran:\n%s", joined)
	}
	exists["scheduler"], ran = true, nil
	run(context.Background(), getenv, &out, &errOut, exec, check)
	if joined := strings.Join(ran, "\n"); !strings.Contains(joined, "scheduler jobs update") || strings.Contains(joined, "jobs create") {
		t.Fatalf("an existing job is updated:\n%s", joined)
	}
	ran, errOut = nil, bytes.Buffer{}
	fail := func(_ context.Context, argv []string) error {
		ran = append(ran, argv[1])
		if argv[1] == "functions" {
			return errors.New("exit status 1")
		}
		return nil
	}
	if code := run(context.Background(), getenv, &out, &errOut, fail, check); code != 1 || len(ran) != 4 || !strings.Contains(errOut.String(), "the api function failed") {
		t.Fatalf("a failure: exit %d after %v: %s", code, ran, errOut.String())
	}
	for _, bad := range []map[string]string{{}, {"PROJECT": "p", "REGION": "us-central1"}, {"PROJECT": "p", "SCHEDULE": "daily"}} {
		errOut.Reset()
		if code := run(context.Background(), func(k string) string { return bad[k] }, &out, &errOut, exec, check); code != 2 {
			t.Errorf("%v: exit %d, %s", bad, code, errOut.String())
		}
	}
}

// TestDeployChecksConfig: a deployment whose environment file the
// functions would refuse, or whose embedding length differs from the
// vector indexes', stops before any command runs, saying why.
func TestDeployChecksConfig(t *testing.T) {
	root(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file, refusal string
	}{
		{"fine", "# the functions' environment\nCHAT_MODEL: \"gpt-4o\"\nEMBEDDING_DIMENSIONS: '512'\n", ""},
		{"no embeddings", "EMBEDDINGS: off\nEMBEDDING_DIMENSIONS: 1536\n", ""},
		{"another length", "EMBEDDING_DIMENSIONS: 1536\n", "EMBEDDING_DIMENSIONS is 1536 but firestore.indexes.json declares vector indexes of 512"},
		{"a bad setting", "RETENTION_MESSAGE_DAYS: forever\n", "RETENTION_MESSAGE_DAYS must be a whole number"},
		{"not a setting", "just words\n", "want NAME: value"},
	} {
		path := filepath.Join(dir, tc.name+".yaml")
		if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"PROJECT": "p", "DRY_RUN": "1", "ENV_FILE": path}
		var out, errOut bytes.Buffer
		ran := 0
		count := func(context.Context, []string) error { ran++; return nil }
		code := run(context.Background(), func(k string) string { return env[k] }, &out, &errOut, count, count)
		switch {
		case tc.refusal == "" && code != 0:
			t.Errorf("%s: exit %d: %s", tc.name, code, errOut.String())
		case tc.refusal != "" && (code != 2 || ran != 0 || !strings.Contains(errOut.String(), tc.refusal)):
			t.Errorf("%s: exit %d after %d commands: %s", tc.name, code, ran, errOut.String())
		}
	}
}
