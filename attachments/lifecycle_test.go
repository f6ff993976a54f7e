package attachments_test

import (
	"context"
	"slices"
	"testing"

	"github.com/chatmemory/backend/attachments"
)

// listCounting counts the listings of a user's attachments.
type listCounting struct {
	attachments.Store
	listed int
}

func (c *listCounting) ListAttachments(ctx context.Context, userID string) ([]attachments.Attachment, error) {
	c.listed++
	return c.Store.ListAttachments(ctx, userID)
}

// TestForgetSessions: the attachments of a page of purged sessions go,
// object and record, after one listing of the user's attachments;
// another session's stay.
func TestForgetSessions(t *testing.T) {
	ctx := context.Background()
	e := newEnv(1<<20, 1<<30, 100)
	of := map[string]string{}
	for _, session := range []string{"s1", "s1", "s2", "s3"} {
		a, err := e.upload("photo.png", "image/png", pngFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.db.ReferenceAttachment(ctx, "alice", a.ID, session); err != nil {
			t.Fatal(err)
		}
		of[a.ID] = session
	}
	counting := &listCounting{Store: e.db}
	e.svc.Store = counting
	if err := e.svc.ForgetSessions(ctx, "alice", []string{"s1", "s2", "gone-before"}); err != nil {
		t.Fatal(err)
	}
	if counting.listed != 1 {
		t.Errorf("the user's attachments listed %d times, want once", counting.listed)
	}
	left, _ := e.db.ListAttachments(ctx, "alice")
	keys, _ := e.blobs.List(ctx, "users/")
	if len(left) != 1 || of[left[0].ID] != "s3" || len(keys) != 1 || !slices.Contains(keys, attachments.Key("alice", left[0].ID)) {
		t.Fatalf("left: records %+v, objects %v; want s3's only", left, keys)
	}
}
