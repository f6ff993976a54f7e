package firestoredb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/sessions"
)

// UsageCollection holds one document per user with the spend of the
// current rate-limit windows.
const UsageCollection = "chat_usage"

type usageDoc struct {
	UserID      string `firestore:"userId"`
	Minute      int64  `firestore:"minute"`
	MinuteTurns int    `firestore:"minuteTurns"`
	MinuteMsgs  int    `firestore:"minuteMessages"`
	Day         string `firestore:"day"`
	DayTokens   int    `firestore:"dayTokens"`
}

// UserDocID is the document id used for a user's own documents: the uid
// itself when it is a safe id, else its hash.
func UserDocID(uid string) string {
	if sessions.ValidID(uid) {
		return uid
	}
	h := sha256.Sum256([]byte(uid))
	return "h" + hex.EncodeToString(h[:20])
}

func (db *DB) UpdateUsage(ctx context.Context, userID string, fn func(*chat.Usage) error) error {
	ref := db.client.Collection(UsageCollection).Doc(UserDocID(userID))
	return db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		var d usageDoc
		snap, err := tx.Get(ref)
		switch {
		case status.Code(err) == codes.NotFound:
		case err != nil:
			return err
		default:
			if err := snap.DataTo(&d); err != nil {
				return err
			}
		}
		u := chat.Usage{UserID: userID, Minute: d.Minute, MinuteTurns: d.MinuteTurns, MinuteMessages: d.MinuteMsgs, Day: d.Day, DayTokens: d.DayTokens}
		if err := fn(&u); err != nil {
			return err
		}
		return tx.Set(ref, usageDoc{UserID: userID, Minute: u.Minute, MinuteTurns: u.MinuteTurns, MinuteMsgs: u.MinuteMessages, Day: u.Day, DayTokens: u.DayTokens})
	})
}
