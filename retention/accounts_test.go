package retention_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// recorder records what RecordAll asks to record, over the sessions of an
// in-process store.
type recorder struct {
	*inprocdb.DB
	asked map[string]time.Time
}

func (r *recorder) RecordAccount(_ context.Context, userID string, at time.Time) error {
	if _, ok := r.asked[userID]; ok {
		return fmt.Errorf("%s asked twice", userID)
	}
	r.asked[userID] = at
	return nil
}

// TestRecordAll: every user who holds a session is asked to be recorded
// once, as of the last activity of the first of their sessions by id,
// over more sessions than one page, and so is a user who holds only
// memory.
func TestRecordAll(t *testing.T) {
	ctx := context.Background()
	r := &recorder{DB: inprocdb.New(), asked: map[string]time.Time{}}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1200 {
		s := &sessions.Session{ID: fmt.Sprintf("s%04d", i), UserID: fmt.Sprintf("u%d", i%7), Status: sessions.StatusActive,
			CreatedAt: at, LastActivityAt: at.Add(time.Duration(i) * time.Hour)}
		if err := r.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// One holds only memory (PATCH /memory/profile before any session).
	u := &longterm.User{UserID: "erin", UpdatedAt: at}
	if err := r.SaveMemory(ctx, "erin", 0, u, longterm.Change{}); err != nil {
		t.Fatal(err)
	}
	n, err := (&retention.Backstop{Accounts: r}).RecordAll(ctx)
	if err != nil || n != 8 || len(r.asked) != 8 {
		t.Fatalf("RecordAll: %d users, %d asked, %v", n, len(r.asked), err)
	}
	if got := r.asked["u3"]; !got.Equal(at.Add(3 * time.Hour)) {
		t.Errorf("u3 recorded as of %s, want its first session's activity", got)
	}
	if got, ok := r.asked["erin"]; !ok || !got.Equal(at) {
		t.Errorf("erin, who holds only memory, recorded: %v as of %s", ok, got)
	}
}
