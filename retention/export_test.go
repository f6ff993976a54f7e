package retention_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storetest"
)

// failingReads is an in-process store whose reads of sessions (or of
// messages) fail from the nth on.
type failingReads struct {
	*inprocdb.DB
	sessionsFrom, messagesFrom int
	sessionReads, messageReads int
}

var errRead = errors.New("storage unavailable")

func (f *failingReads) ListSessions(ctx context.Context, q sessions.ListQuery) ([]*sessions.Session, error) {
	if f.sessionReads++; f.sessionsFrom > 0 && f.sessionReads >= f.sessionsFrom {
		return nil, errRead
	}
	return f.DB.ListSessions(ctx, q)
}

func (f *failingReads) ListMessages(ctx context.Context, q history.ListQuery) ([]history.Message, error) {
	if f.messageReads++; f.messagesFrom > 0 && f.messageReads >= f.messagesFrom {
		return nil, errRead
	}
	return f.DB.ListMessages(ctx, q)
}

// memoryData is a domain that keeps one value per user.
type memoryData map[string]any

func (m memoryData) ExportUser(_ context.Context, userID string) (any, error) { return m[userID], nil }
func (m memoryData) EraseUser(context.Context, string) (int, error)           { return 0, nil }

type exported struct {
	UserID   string `json:"userId"`
	Sessions []struct {
		Session  sessions.Session     `json:"session"`
		Messages []history.Message    `json:"messages"`
		Compacts []history.Compaction `json:"compactions"`
	} `json:"sessions"`
	Memory any `json:"memory"`
}

// TestExport: an export holds every session of the user in every status,
// every message in order (more than a page of each), and each domain's
// data; one that cannot start writes nothing, and one that fails midway
// is left unterminated, so it never passes for a whole one.
func TestExport(t *testing.T) {
	ctx := context.Background()
	db := &failingReads{DB: inprocdb.New()}
	env := storetest.NewEnv(t, db)
	long := storetest.Must[*sessions.Session](t)(env.Sessions.Create(ctx, "alice", sessions.CreateInput{Title: "Long"}))
	for i := range 201 {
		env.Say(t, long, history.RoleUser, fmt.Sprintf("message %d", i))
	}
	for i := range 201 {
		storetest.Must[*sessions.Session](t)(env.Sessions.Create(ctx, "alice", sessions.CreateInput{Title: fmt.Sprintf("Chat %d", i)}))
	}
	storetest.Must[*sessions.Session](t)(env.Sessions.Archive(ctx, "alice", long.ID))
	gone := storetest.Must[*sessions.Session](t)(env.Sessions.Create(ctx, "alice", sessions.CreateInput{Title: "Gone"}))
	storetest.Must[*sessions.Session](t)(env.Sessions.Delete(ctx, "alice", gone.ID))
	storetest.Must[*sessions.Session](t)(env.Sessions.Create(ctx, "bob", sessions.CreateInput{Title: "Bob's"}))
	p := &retention.Privacy{Store: db, Now: env.Clock.Now, Data: map[string]retention.UserData{"memory": memoryData{"alice": "lives in Oslo"}}}

	for _, tc := range []struct {
		name                       string
		user                       string
		sessionsFrom, messagesFrom int
		check                      func(t *testing.T, out []byte, err error)
	}{
		{"everything, a page at a time", "alice", 0, 0, func(t *testing.T, out []byte, err error) {
			var e exported
			if err != nil || json.Unmarshal(out, &e) != nil {
				t.Fatalf("export: %v\n%.300s", err, out)
			}
			byStatus := map[sessions.Status]int{}
			for _, s := range e.Sessions {
				byStatus[s.Session.Status]++
				if s.Session.UserID != "alice" {
					t.Errorf("another user's session: %+v", s.Session)
				}
				if s.Session.ID == long.ID && (len(s.Messages) != 201 || s.Messages[200].Content != "message 200" || s.Compacts == nil) {
					t.Errorf("the long session: %d messages, compactions %v", len(s.Messages), s.Compacts)
				}
			}
			if e.UserID != "alice" || byStatus[sessions.StatusActive] != 201 || byStatus[sessions.StatusArchived] != 1 || byStatus[sessions.StatusDeleted] != 1 || e.Memory != "lives in Oslo" {
				t.Errorf("exported %s: %v sessions by status, memory %v", e.UserID, byStatus, e.Memory)
			}
		}},
		{"a user with nothing", "carol", 0, 0, func(t *testing.T, out []byte, err error) {
			var e map[string]any
			if err != nil || json.Unmarshal(out, &e) != nil || e["userId"] != "carol" || len(e["sessions"].([]any)) != 0 || e["memory"] != nil {
				t.Errorf("export: %v %s", err, out)
			}
		}},
		{"the first read fails", "alice", 1, 0, func(t *testing.T, out []byte, err error) {
			if !errors.Is(err, errRead) || len(out) > 0 {
				t.Errorf("err %v, wrote %q", err, out)
			}
		}},
		{"a read fails midway", "alice", 0, 2, func(t *testing.T, out []byte, err error) {
			if !errors.Is(err, errRead) || len(out) == 0 || json.Valid(out) {
				t.Errorf("err %v, wrote %d bytes (valid JSON: %v)", err, len(out), json.Valid(out))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db.sessionsFrom, db.messagesFrom, db.sessionReads, db.messageReads = tc.sessionsFrom, tc.messagesFrom, 0, 0
			var out bytes.Buffer
			err := p.Export(ctx, tc.user, &out)
			tc.check(t, out.Bytes(), err)
		})
	}
}
