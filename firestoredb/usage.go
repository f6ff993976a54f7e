package firestoredb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// A user's usage is kept in documents no two concurrent turns of theirs
// need to write alike:
//
//	chat_usage/{uid}                  the appended-messages window (appends only)
//	chat_usage/{uid}/usageDays/{day}  tokens spent that UTC day, added to by increments
//	chat_usage/{uid}/turnSlots/sNN    the minute each turn slot was last taken in
const (
	UsageCollection     = "chat_usage"
	UsageDaysCollection = "usageDays"
	TurnSlotsCollection = "turnSlots"
)

type usageDoc struct {
	UserID     string `firestore:"userId"`
	Minute     int64  `firestore:"minute"`
	MinuteMsgs int    `firestore:"minuteMessages"`
	Token      string `firestore:"token,omitempty"` // of the last update
}

type dayDoc struct {
	UserID string `firestore:"userId"`
	Day    string `firestore:"day"`
	Tokens int    `firestore:"tokens"`
}

type slotDoc struct {
	UserID string `firestore:"userId"`
	Minute int64  `firestore:"minute"`
}

// UserDocID is the document id used for a user's own documents: the uid
// itself when it is a safe id, else its hash.
func UserDocID(uid string) string {
	if ids.Valid(uid) {
		return uid
	}
	h := sha256.Sum256([]byte(uid))
	return "h" + hex.EncodeToString(h[:20])
}

func (db *DB) usageRef(userID string) *firestore.DocumentRef {
	return db.client.Collection(UsageCollection).Doc(UserDocID(userID))
}

func (db *DB) dayRef(userID, day string) *firestore.DocumentRef {
	return db.usageRef(userID).Collection(UsageDaysCollection).Doc(day)
}

func (db *DB) slotRef(userID string, i int) *firestore.DocumentRef {
	return db.usageRef(userID).Collection(TurnSlotsCollection).Doc(fmt.Sprintf("s%02d", i))
}

// UpdateUsage reads the window and the day in one round trip and writes the
// window in one commit, on condition that it did not change meanwhile: no
// transaction, so no BeginTransaction round trip, and concurrent appends of
// a user retry with backoff instead of queueing on locks. Each call marks
// the window with a token of its own, so after a commit whose answer was
// lost it finds its own write instead of counting the messages twice.
func (db *DB) UpdateUsage(ctx context.Context, userID, day string, fn func(*chat.Usage) error) error {
	ref, dref := db.usageRef(userID), db.dayRef(userID, day)
	token := ids.New()
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		snaps, err := get([]*firestore.DocumentRef{ref, dref})
		if err != nil {
			return nil, err
		}
		u, landed, err := readWindow(snaps[0], snaps[1], userID, day, token)
		if err != nil || landed {
			return nil, err
		}
		if err := fn(&u); err != nil {
			return nil, err
		}
		w := db.newWrites()
		writeWindow(w, snaps[0], u, token)
		return w, nil
	})
	return err
}

// readWindow decodes a user's appended-messages window and their spend on
// day; landed reports that the window was last written under token.
func readWindow(window, daySnap *firestore.DocumentSnapshot, userID, day, token string) (u chat.Usage, landed bool, err error) {
	var d usageDoc
	var dd dayDoc
	if err := dataTo(window, &d); err != nil {
		return u, false, err
	}
	if err := dataTo(daySnap, &dd); err != nil {
		return u, false, err
	}
	u = chat.Usage{UserID: userID, Minute: d.Minute, MinuteMessages: d.MinuteMsgs, Day: day, DayTokens: dd.Tokens}
	return u, token != "" && d.Token == token, nil
}

// writeWindow writes u's window in w, on condition that it is as window
// was read (created if there was none), marked with token.
func writeWindow(w *writes, window *firestore.DocumentSnapshot, u chat.Usage, token string) {
	nd := usageDoc{UserID: u.UserID, Minute: u.Minute, MinuteMsgs: u.MinuteMessages, Token: token}
	if window.Exists() {
		w.Update(window.Ref, fieldUpdates(nd), firestore.LastUpdateTime(window.UpdateTime))
	} else {
		w.Create(window.Ref, nd)
	}
}

// dataTo decodes snap into v, leaving v as it is if there is no document.
func dataTo(snap *firestore.DocumentSnapshot, v any) error {
	if !snap.Exists() {
		return nil
	}
	if err := snap.DataTo(v); err != nil {
		return errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	return nil
}

// addTokens adds n to the user's spend on day in w: an increment, so
// concurrent turns never conflict over it.
func (db *DB) addTokens(w *writes, userID, day string, n int) {
	w.Set(db.dayRef(userID, day), map[string]any{"userId": userID, "day": day, "tokens": firestore.Increment(n)}, firestore.MergeAll)
}

// AddTokens adds n to the day's spend with an increment, which needs no
// read. It is tried again when it fails before landing or conflicts; a
// lost answer is tried again too, so n may then be counted twice: an
// over-count of the day's spend is the safe side of a limit.
func (db *DB) AddTokens(ctx context.Context, userID, day string, n int) error {
	_, err := db.optimistic(ctx, func(context.Context, getAll) (*writes, error) {
		w := db.newWrites()
		db.addTokens(w, userID, day, n)
		return w, nil
	})
	return err
}

// GetUsage returns a user's usage documents, or nil if there are none.
func (db *DB) GetUsage(ctx context.Context, userID string) (*chat.UsageRecord, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snap, err := db.usageRef(userID).Get(ctx)
	if err != nil && !isNotFound(err) {
		return nil, translate(err)
	}
	r := &chat.UsageRecord{Days: map[string]int{}}
	found := err == nil
	if found {
		var d usageDoc
		if err := dataTo(snap, &d); err != nil {
			return nil, err
		}
		r.Minute, r.MinuteMessages = d.Minute, d.MinuteMsgs
	}
	days, err := db.getAll(ctx, db.usageRef(userID).Collection(UsageDaysCollection).Query)
	if err != nil {
		return nil, err
	}
	for _, s := range days {
		var d dayDoc
		if err := dataTo(s, &d); err != nil {
			return nil, err
		}
		r.Days[d.Day] = d.Tokens
	}
	slots, err := db.getAll(ctx, db.usageRef(userID).Collection(TurnSlotsCollection).OrderBy(firestore.DocumentID, firestore.Asc))
	if err != nil {
		return nil, err
	}
	for _, s := range slots {
		var d slotDoc
		if err := dataTo(s, &d); err != nil {
			return nil, err
		}
		r.TurnMinutes = append(r.TurnMinutes, d.Minute)
	}
	if !found && len(days) == 0 && len(slots) == 0 {
		return nil, nil
	}
	return r, nil
}

// DeleteUsage deletes a user's usage documents and returns how many there
// were.
func (db *DB) DeleteUsage(ctx context.Context, userID string) (int, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	n := 0
	if _, err := db.usageRef(userID).Get(ctx); err == nil {
		if _, err := db.usageRef(userID).Delete(ctx); err != nil {
			return n, translate(err)
		}
		n++
	} else if !isNotFound(err) {
		return n, translate(err)
	}
	for _, name := range []string{UsageDaysCollection, TurnSlotsCollection, SessionListsCollection} {
		m, err := db.deleteQuery(ctx, db.usageRef(userID).Collection(name).Query)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// UsageOn reads, in one batched read, the user's message window, their
// spend on day and their first slots turn slots.
func (db *DB) UsageOn(ctx context.Context, userID, day string, slots int) (*chat.UsageRecord, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	refs := []*firestore.DocumentRef{db.usageRef(userID), db.dayRef(userID, day)}
	for i := range slots {
		refs = append(refs, db.slotRef(userID, i))
	}
	snaps, err := db.client.GetAll(ctx, refs)
	if err != nil {
		return nil, translate(err)
	}
	r := &chat.UsageRecord{Days: map[string]int{day: 0}, TurnMinutes: make([]int64, slots)}
	if snaps[0].Exists() {
		var d usageDoc
		if err := dataTo(snaps[0], &d); err != nil {
			return nil, err
		}
		r.Minute, r.MinuteMessages = d.Minute, d.MinuteMsgs
	}
	if snaps[1].Exists() {
		var d dayDoc
		if err := dataTo(snaps[1], &d); err != nil {
			return nil, err
		}
		r.Days[day] = d.Tokens
	}
	for i, s := range snaps[2:] {
		if s.Exists() {
			var d slotDoc
			if err := dataTo(s, &d); err != nil {
				return nil, err
			}
			r.TurnMinutes[i] = d.Minute
		}
	}
	return r, nil
}
