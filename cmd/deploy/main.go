// Command deploy deploys the whole backend to a Google Cloud / Firebase
// project, idempotently: the APIs it needs, the security rules and
// indexes, the api function, the retention sweep (its Pub/Sub topic, its
// function and the Cloud Scheduler job that triggers it daily) and the web
// app on Hosting. With DRY_RUN=1 it prints every command and runs none.
// `make deploy PROJECT=… REGION=…` runs it; its settings are the
// Makefile's variables, read from the environment.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Getenv, os.Stdout, os.Stderr, execute, quiet))
}

// runner runs one command, its output to the terminal.
type runner func(ctx context.Context, argv []string) error

func execute(ctx context.Context, argv []string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// quiet runs a check without its output (its failure is an answer).
func quiet(ctx context.Context, argv []string) error {
	return exec.CommandContext(ctx, argv[0], argv[1:]...).Run()
}

// run deploys: exec runs each command, check each step's check.
func run(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer, exec, check runner) int {
	s := settingsFrom(getenv)
	if getenv("OPENAI_SECRET") == "none" {
		s.Secret = ""
	}
	regions, err := rewriteRegions("firebase.json")
	if err == nil {
		err = s.validate(regions)
	}
	if err == nil {
		err = checkConfig(s.Project, s.EnvFile, "firestore.indexes.json")
	}
	if err != nil {
		fmt.Fprintln(stderr, "deploy:", err)
		return 2
	}
	steps := plan(s)
	if getenv("DRY_RUN") == "1" {
		for _, st := range steps {
			fmt.Fprintf(stdout, "# %s\n%s\n", st.what, st.line())
		}
		return 0
	}
	if _, err := os.Stat("web/public/config.json"); err != nil {
		fmt.Fprintln(stderr, "deploy: web/public/config.json is missing: copy web/config.example.json there and fill in your web app's Firebase config")
		return 2
	}
	for _, st := range steps {
		fmt.Fprintf(stderr, "deploy: %s\n", st.what)
		argv := st.create
		if st.check != nil {
			switch err := check(ctx, st.check); {
			case err == nil && st.update == nil:
				continue // it exists
			case err == nil:
				argv = st.update
			}
		}
		if err := exec(ctx, argv); err != nil {
			fmt.Fprintf(stderr, "deploy: %s failed: %v\n  %s\nfix it and run again: every step can run twice\n", st.what, err, shell(argv))
			return 1
		}
	}
	return 0
}

func settingsFrom(getenv func(string) string) settings {
	or := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	return settings{Project: getenv("PROJECT"), Region: or("REGION", "europe-west1"), TimeZone: or("TIME_ZONE", "Etc/UTC"),
		Schedule: or("SCHEDULE", "0 3 * * *"), Secret: or("OPENAI_SECRET", "openai-api-key"), EnvFile: getenv("ENV_FILE"),
		Runtime: or("RUNTIME", "go126")}
}

// rewriteRegions are the regions firebase.json's Hosting rewrites send
// API paths to.
func rewriteRegions(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("run it from the repository's root: %w", err)
	}
	var cfg struct {
		Hosting struct {
			Rewrites []struct {
				Function *struct {
					FunctionID string `json:"functionId"`
					Region     string `json:"region"`
				} `json:"function"`
			} `json:"rewrites"`
		} `json:"hosting"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, errors.New("firebase.json: " + err.Error())
	}
	var out []string
	for _, r := range cfg.Hosting.Rewrites {
		if r.Function != nil {
			out = append(out, r.Function.Region)
		}
	}
	return out, nil
}
