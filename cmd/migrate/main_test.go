package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/chatmemory/backend/cmd/internal/commandtest"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// TestMigrateCommand: the command migrates the configured project (here
// one already in this version's layout: it looks at each session and
// changes nothing), prints its report, and refuses bad arguments.
func TestMigrateCommand(t *testing.T) {
	getenv := emulatortest.Getenv(t, emulatortest.ProjectID())
	ctx := context.Background()
	backend := commandtest.Open(t, "migrate", getenv)
	s, err := backend.Sessions.Create(ctx, "alice", sessions.CreateInput{Title: "trips"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.Append(ctx, backend.History, s, "", history.Draft{Role: history.RoleUser, Content: "which train goes to Bergen?"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want firestoredb.MigrateReport
	}{
		{"a project in this layout", nil, 0, firestoredb.MigrateReport{Sessions: 1, After: s.ID}},
		{"resumed after the last session", []string{"-after", s.ID}, 0, firestoredb.MigrateReport{After: s.ID}},
		{"an unknown flag", []string{"-bogus"}, 2, firestoredb.MigrateReport{}},
		{"an argument", []string{"now"}, 2, firestoredb.MigrateReport{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(ctx, tc.args, getenv, &out, &errOut)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errOut.String())
			}
			if code != 0 {
				if errOut.Len() == 0 {
					t.Error("refused without saying why")
				}
				return
			}
			var rep firestoredb.MigrateReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep != tc.want {
				t.Errorf("report %s (%v), want %+v", out.String(), err, tc.want)
			}
		})
	}
}
