package firestoredb

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/retention"
)

// AccountsCollection holds one document per user who holds data:
// chat_accounts/{uid} {userId, seenAt}, written in the commit that creates
// each of their sessions, their memory document or their usage tail document,
// and by the backstop for accounts Auth still knows; the backstop queries it by seenAt (one automatic single-field
// index) for the accounts to ask Auth about.
const AccountsCollection = "chat_accounts"

type accountDoc struct {
	UserID string    `firestore:"userId"`
	SeenAt time.Time `firestore:"seenAt"`
}

// AccountsSeenBefore returns up to limit accounts last seen before t, by
// seenAt then document id, after cursor.
func (db *DB) AccountsSeenBefore(ctx context.Context, t time.Time, after *retention.AccountCursor, limit int) ([]retention.Account, error) {
	q := db.client.Collection(AccountsCollection).Where("seenAt", "<", t).OrderBy("seenAt", firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc).Limit(limit)
	if after != nil {
		q = q.StartAfter(after.SeenAt, UserDocID(after.UserID))
	}
	snaps, err := db.getAll(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]retention.Account, 0, len(snaps))
	for _, s := range snaps {
		var d accountDoc
		if err := dataTo(s, &d); err != nil {
			return nil, err
		}
		out = append(out, retention.Account{UserID: d.UserID, SeenAt: d.SeenAt})
	}
	return out, nil
}

// RecordAccount creates userID's record as seen at at, unless there is
// one.
func (db *DB) RecordAccount(ctx context.Context, userID string, at time.Time) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	_, err := db.accountRef(userID).Create(ctx, accountDoc{UserID: userID, SeenAt: at})
	if status.Code(err) == codes.AlreadyExists {
		return nil
	}
	return translate(err)
}

// MarkSeen sets seenAt of each account in one commit, each on condition
// that it still exists (an account erased meanwhile stays erased).
func (db *DB) MarkSeen(ctx context.Context, userIDs []string, at time.Time) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	bw := db.client.BulkWriter(ctx)
	var jobs []*firestore.BulkWriterJob
	for _, uid := range userIDs {
		job, err := bw.Update(db.accountRef(uid), []firestore.Update{{Path: "seenAt", Value: at}})
		if err != nil {
			bw.End()
			return translate(err)
		}
		jobs = append(jobs, job)
	}
	bw.End()
	for _, job := range jobs {
		if _, err := job.Results(); err != nil && !isNotFound(err) {
			return translate(err)
		}
	}
	return nil
}

// holderCollections are where a user may hold data without a session, in
// the order HoldersAfter pages them.
var holderCollections = []string{UsersCollection, UsageCollection}

// HoldersAfter pages users/ and then chat_usage/ by document id (their
// userId only), each user as of when that document was last written; the
// cursor is "{collection}/{id}".
func (db *DB) HoldersAfter(ctx context.Context, after string, limit int) ([]retention.Account, string, error) {
	i, key := 0, ""
	if c, k, ok := strings.Cut(after, "/"); ok {
		i, key = slices.Index(holderCollections, c), k
	}
	for ; i >= 0 && i < len(holderCollections); i, key = i+1, "" {
		q := db.client.Collection(holderCollections[i]).OrderBy(firestore.DocumentID, firestore.Asc).Select("userId").Limit(limit)
		if key != "" {
			q = q.StartAfter(key)
		}
		snaps, err := db.getAll(ctx, q)
		if err != nil {
			return nil, "", err
		}
		if len(snaps) == 0 {
			continue
		}
		out := make([]retention.Account, 0, len(snaps))
		for _, s := range snaps {
			if uid, _ := s.DataAt("userId"); uid != nil && uid != "" {
				out = append(out, retention.Account{UserID: fmt.Sprint(uid), SeenAt: s.UpdateTime})
			}
		}
		return out, holderCollections[i] + "/" + snaps[len(snaps)-1].Ref.ID, nil
	}
	return nil, "", nil
}
