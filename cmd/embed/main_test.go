package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/cmd/internal/commandtest"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// TestEmbedBackfills: history stored while embeddings were off is found
// by search after the command ran; a second run embeds nothing; bad flags
// and EMBEDDINGS=off are refused.
func TestEmbedBackfills(t *testing.T) {
	project := emulatortest.ProjectID()
	env := func(vars ...string) func(string) string { return emulatortest.Getenv(t, project, vars...) }
	ctx := context.Background()
	backend := commandtest.Open(t, "embed", env("EMBEDDINGS", "off"))
	s, err := backend.Sessions.Create(ctx, "alice", sessions.CreateInput{Title: "trips"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Append(ctx, backend.History, s, "", history.Draft{Role: history.RoleUser, Content: "which train goes to Bergen?"},
		history.Draft{Role: history.RoleAssistant, Content: "The Bergen Line from Oslo, seven hours through the mountains."}); err != nil {
		t.Fatal(err)
	}

	embed := func(getenv func(string) string, args ...string) (recall.BackfillReport, int, string) {
		var out, errOut bytes.Buffer
		code := run(ctx, args, getenv, &out, &errOut)
		var rep recall.BackfillReport
		if code != 2 {
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("output %q: %v (stderr %s)", out.String(), err, errOut.String())
			}
		}
		return rep, code, errOut.String()
	}
	if rep, code, log := embed(env(), "-rate", "50"); code != 0 || rep.Embedded != 1 || rep.Sessions != 1 || !strings.Contains(log, "lexical-stand-in") {
		t.Fatalf("first run: %d %+v %s", code, rep, log)
	}
	if rep, code, _ := embed(env()); code != 0 || rep.Embedded != 0 || rep.Skipped != 1 {
		t.Fatalf("second run: %d %+v", code, rep)
	}
	search, err := app.ConfigFromEnv(env())
	if err != nil {
		t.Fatal(err)
	}
	on, err := app.Open(ctx, search, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer on.Close()
	results, err := on.Recall.Search(ctx, "alice", "train to Bergen", "", 5)
	if err != nil || len(results) == 0 || results[0].SessionID != s.ID {
		t.Fatalf("search after the backfill: %+v, %v", results, err)
	}
	for _, bad := range [][]string{{"-rate", "0"}, {"-batch", "0"}, {"-batch", "257"}, {"-nope"}} {
		if _, code, _ := embed(env(), bad...); code != 2 {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
	if _, code, log := embed(env("EMBEDDINGS", "off")); code != 2 || !strings.Contains(log, "EMBEDDINGS=off") {
		t.Errorf("EMBEDDINGS=off: exit %d, %s", code, log)
	}
}
