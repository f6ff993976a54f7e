package main

import (
	"fmt"
	"strings"
)

// settings are what a deployment is made of (the Makefile's variables).
type settings struct {
	Project  string // PROJECT: the Google Cloud / Firebase project id
	Region   string // REGION: the functions' region (firebase.json's rewrites name it too)
	TimeZone string // TIME_ZONE: the scheduler job's
	Schedule string // SCHEDULE: when the sweep runs (cron)
	Secret   string // OPENAI_SECRET: the Secret Manager secret holding OPENAI_API_KEY ("" for none)
	EnvFile  string // ENV_FILE: a YAML file of the functions' environment ("" for none)
	Runtime  string // RUNTIME: the Go runtime of Cloud Functions
}

// Names of what the deployment creates.
const (
	apiFunction   = "api"
	sweepFunction = "sweep"
	// userDeletedFunction receives Firebase Auth's user-deleted event,
	// which reaches only 1st-gen functions.
	userDeletedFunction = "userDeleted"
	userDeletedEvent    = "providers/firebase.auth/eventTypes/user.delete"
	// afterTurnFunction runs a reply's after-turn job when the instance
	// that answered did not: a Firestore trigger on the job's creation.
	afterTurnFunction = "afterTurn"
	jobCreatedEvent   = "google.cloud.firestore.document.v1.created"
	jobDocuments      = "chat_sessions/{session}/jobs/{job}"
	sweepTopic        = "retention-sweep"
	sweepJob          = "retention-sweep-daily"
	idSecret          = "chat-id-secret" // ID_SECRET: the key of ids derived from client keys
)

// apis are the services the deployment needs enabled.
var apis = []string{"cloudfunctions.googleapis.com", "run.googleapis.com", "cloudbuild.googleapis.com",
	"artifactregistry.googleapis.com", "eventarc.googleapis.com", "pubsub.googleapis.com",
	"cloudscheduler.googleapis.com", "secretmanager.googleapis.com", "firestore.googleapis.com",
	"cloudtrace.googleapis.com", "monitoring.googleapis.com"}

// step is one command of the plan; with check set, the command runs only
// if check fails (what exists is left as it is, or updated by update).
type step struct {
	what   string
	check  []string // nil: always run
	create []string
	update []string // run instead of create when check succeeds; nil: nothing
}

// line is how the dry run prints a step.
func (s step) line() string {
	switch {
	case s.check == nil:
		return shell(s.create)
	case s.update == nil:
		return shell(s.check) + " || " + shell(s.create)
	}
	return "if " + shell(s.check) + "; then " + shell(s.update) + "; else " + shell(s.create) + "; fi"
}

// shell quotes argv as a POSIX shell would need.
func shell(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$*?;&|<>(){}[]\\`!#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// validate refuses settings that would deploy something broken.
func (s settings) validate(rewriteRegions []string) error {
	var problems []string
	if s.Project == "" {
		problems = append(problems, "PROJECT is required (the Google Cloud / Firebase project id)")
	}
	if s.Region == "" {
		problems = append(problems, "REGION is required")
	}
	for _, r := range rewriteRegions {
		if r != s.Region {
			problems = append(problems, fmt.Sprintf("firebase.json rewrites the API to region %s, not REGION=%s: change one of them", r, s.Region))
			break
		}
	}
	if len(strings.Fields(s.Schedule)) != 5 {
		problems = append(problems, fmt.Sprintf("SCHEDULE must be a cron line of 5 fields, not %q", s.Schedule))
	}
	if s.TimeZone == "" || s.Runtime == "" {
		problems = append(problems, "TIME_ZONE and RUNTIME must not be empty")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// plan is every command of a deployment, in order; each can run again.
func plan(s settings) []step {
	p := []string{"--project=" + s.Project}
	gcloud := func(args ...string) []string { return append(append([]string{"gcloud"}, args...), p...) }
	common := []string{"--region=" + s.Region, "--runtime=" + s.Runtime, "--source=."}
	secrets := "ID_SECRET=" + idSecret + ":latest"
	if s.Secret != "" {
		secrets = "OPENAI_API_KEY=" + s.Secret + ":latest," + secrets
	}
	common = append(common, "--set-secrets="+secrets)
	if s.EnvFile != "" {
		common = append(common, "--env-vars-file="+s.EnvFile)
	}
	deployAs := func(gen, name string, args ...string) []string {
		return gcloud(append(append([]string{"functions", "deploy", name, gen, "--entry-point=" + name}, common...), args...)...)
	}
	deploy := func(name string, args ...string) []string { return deployAs("--gen2", name, args...) }
	job := func(verb string) []string {
		return gcloud("scheduler", "jobs", verb, "pubsub", sweepJob, "--location="+s.Region, "--schedule="+s.Schedule,
			"--time-zone="+s.TimeZone, "--topic="+sweepTopic, "--message-body={}")
	}
	return []step{
		{what: "enable the APIs", create: gcloud(append([]string{"services", "enable"}, apis...)...)},
		// Made once from 48 random bytes and never printed; every
		// instance derives ids under it, so it is never rotated in place.
		{what: "the id secret", check: gcloud("secrets", "describe", idSecret),
			create: []string{"sh", "-c", "head -c 48 /dev/urandom | base64 | tr -d '\\n' | gcloud secrets create " + idSecret +
				" --replication-policy=automatic --data-file=- --project=" + s.Project}},
		{what: "security rules and indexes", create: []string{"npx", "firebase", "deploy", "--only", "firestore:rules,firestore:indexes", "--project=" + s.Project}},
		// The turn waits MODEL_TIMEOUT_SECONDS for the model and goes on
		// with the work after the reply: 300 s covers both.
		// One instance serves many requests at once (a vCPU allows it), so
		// a session's turns mostly reach the instance that kept its state.
		{what: "the api function", create: deploy(apiFunction, "--trigger-http", "--allow-unauthenticated", "--timeout=300s", "--cpu=1", "--concurrency=80")},
		{what: "the sweep's topic", check: gcloud("pubsub", "topics", "describe", sweepTopic), create: gcloud("pubsub", "topics", "create", sweepTopic)},
		// SWEEP_BUDGET_SECONDS (480) stops a run before this timeout.
		{what: "the sweep function", create: deploy(sweepFunction, "--trigger-topic="+sweepTopic, "--timeout=540s")},
		// Erasure is idempotent: a failed run is retried by the platform.
		{what: "the user-deleted function", create: deployAs("--no-gen2", userDeletedFunction, "--trigger-event="+userDeletedEvent,
			"--trigger-resource="+s.Project, "--retry", "--timeout=540s")},
		// A job still held by the turn that wrote it is an error, which
		// the platform retries with backoff; the sweep is the backstop.
		{what: "the after-turn function", create: deploy(afterTurnFunction, "--trigger-event-filters=type="+jobCreatedEvent,
			"--trigger-event-filters=database=(default)", "--trigger-event-filters-path-pattern=document="+jobDocuments,
			"--trigger-location="+s.Region, "--retry", "--timeout=300s")},
		{what: "the daily schedule", check: gcloud("scheduler", "jobs", "describe", sweepJob, "--location="+s.Region),
			create: job("create"), update: job("update")},
		{what: "the web app", create: []string{"npm", "run", "--silent", "build:web"}},
		{what: "Hosting", create: []string{"npx", "firebase", "deploy", "--only", "hosting", "--project=" + s.Project}},
	}
}
