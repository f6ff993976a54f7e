package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// A user's usage is kept in documents no two concurrent turns of theirs
// need to write alike:
//
//	chat_usage/{uid}                  the per-minute message quota (appends only)
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
	SearchMin  int64  `firestore:"searchMinute,omitempty"`
	MinuteSrch int    `firestore:"minuteSearches,omitempty"`
	Token      string `firestore:"token,omitempty"` // of the last update
}

type dayDoc struct {
	UserID string         `firestore:"userId"`
	Day    string         `firestore:"day"`
	Tokens int            `firestore:"tokens"`
	Models map[string]int `firestore:"models,omitempty"` // replies' tokens by the model that answered
	// Bill are the same tokens as input, cached input and output.
	Bill map[string]chat.ModelTokens `firestore:"bill,omitempty"`
}

type slotDoc struct {
	UserID string `firestore:"userId"`
	Minute int64  `firestore:"minute"`
}

// UpdateUsage reads the quota and the day in one round trip and writes the
// quota in one commit, on condition that it did not change meanwhile: no
// transaction, so no BeginTransaction round trip, and concurrent appends of
// a user retry with backoff instead of queueing on locks. Each call marks
// the quota with a token of its own, so after a commit whose answer was
// lost it finds its own write instead of counting the messages twice.
func (db *DB) UpdateUsage(ctx context.Context, userID, day string, fn func(*chat.Usage) error) error {
	ref, dref := db.usageRef(userID), db.dayRef(userID, day)
	token := ids.New()
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		snaps, err := get([]*firestore.DocumentRef{ref, dref})
		if err != nil {
			return nil, err
		}
		ur, err := readUsage(snaps[0], snaps[1], day)
		if err != nil || ur.quota.Token == token {
			return nil, err
		}
		u := ur.usage(userID)
		if err := fn(&u); err != nil {
			return nil, err
		}
		w := db.newWrites()
		writeQuota(w, ref, ur.quotaTime, u, token)
		if ur.quotaTime.IsZero() { // the user's first usage document: a search may come before any session
			w.Set(db.accountRef(userID), accountDoc{UserID: userID, SeenAt: quotaTime(u)})
		}
		return w, nil
	})
	return err
}

// quotaTime is when u's quota was last written: the start of its
// latest minute.
func quotaTime(u chat.Usage) time.Time {
	return time.Unix(max(u.Minute, u.SearchMinute)*60, 0).UTC()
}

// usageRead is a user's per-minute message quota and their spend on one
// day, as read or as a commit left them, with the update times a write
// planned from it is conditioned on (zero: there was no such document).
type usageRead struct {
	quota     usageDoc
	quotaTime time.Time
	day       string
	dayTokens int
	dayTime   time.Time
}

// readUsage decodes a user's per-minute message quota and their spend on
// day.
func readUsage(quota, daySnap *firestore.DocumentSnapshot, day string) (usageRead, error) {
	ur := usageRead{day: day}
	var dd dayDoc
	if err := dataTo(quota, &ur.quota); err != nil {
		return ur, err
	}
	if err := dataTo(daySnap, &dd); err != nil {
		return ur, err
	}
	if quota.Exists() {
		ur.quotaTime = quota.UpdateTime
	}
	if daySnap.Exists() {
		ur.dayTokens, ur.dayTime = dd.Tokens, daySnap.UpdateTime
	}
	return ur, nil
}

func (ur usageRead) usage(userID string) chat.Usage {
	return chat.Usage{UserID: userID, Minute: ur.quota.Minute, MinuteMessages: ur.quota.MinuteMsgs,
		SearchMinute: ur.quota.SearchMin, MinuteSearches: ur.quota.MinuteSrch, Day: ur.day, DayTokens: ur.dayTokens}
}

// after is ur as the commit of b (its results res) left it, given what
// it wrote of the quota (u) and the spend (n tokens); false if b did not
// write them on condition of ur, so that what they hold now is unknown.
func (ur usageRead) after(b *writes, res []*firestore.WriteResult, quota, day *firestore.DocumentRef, u chat.Usage, n int) (usageRead, bool) {
	t, ok := b.time(res, quota)
	if !ok {
		return ur, false
	}
	ur.quota, ur.quotaTime = usageDocOf(u, ""), t
	if n > 0 {
		if ur.dayTime, ok = b.time(res, day); !ok {
			return ur, false
		}
		ur.dayTokens += n
	}
	return ur, true
}

// writeQuota writes u's quota in w, on condition that it was last
// written at read (created if read is zero), marked with token.
func writeQuota(w *writes, ref *firestore.DocumentRef, read time.Time, u chat.Usage, token string) {
	nd := usageDocOf(u, token)
	if read.IsZero() {
		w.Create(ref, nd)
	} else {
		w.Update(ref, fieldUpdates(nd), firestore.LastUpdateTime(read))
	}
}

// usageDocOf is the per-minute quota document of u, marked with token.
func usageDocOf(u chat.Usage, token string) usageDoc {
	return usageDoc{UserID: u.UserID, Minute: u.Minute, MinuteMsgs: u.MinuteMessages,
		SearchMin: u.SearchMinute, MinuteSrch: u.MinuteSearches, Token: token}
}

// AddTokens adds n to the day's spend with an increment, which needs no
// read. It is tried again when it fails before landing or conflicts; a
// lost answer is tried again too, so n may then be counted twice: an
// over-count of the day's spend is the safe side of a limit.
func (db *DB) AddTokens(ctx context.Context, userID, day string, n int) error {
	_, err := db.optimistic(ctx, func(context.Context, getAll) (*writes, error) {
		w := db.newWrites()
		db.addTokens(w, userID, day, n, nil)
		return w, nil
	})
	return err
}

// addTokens adds n to the user's spend on day in w: an increment, so
// concurrent turns never conflict over it.
func (db *DB) addTokens(w *writes, userID, day string, n int, byModel map[string]chat.ModelTokens) {
	data := map[string]any{"userId": userID, "day": day, "tokens": firestore.Increment(n)}
	if len(byModel) > 0 {
		models, bill := map[string]any{}, map[string]any{}
		for m, k := range byModel {
			models[m] = firestore.Increment(k.Total())
			bill[m] = map[string]any{"input": firestore.Increment(k.Input), "cached": firestore.Increment(k.Cached), "output": firestore.Increment(k.Output)}
		}
		data["models"], data["bill"] = models, bill
	}
	w.Set(db.dayRef(userID, day), data, firestore.MergeAll)
}

// ChargeAfter adds n to the day's spend with an increment on condition
// that the day's document exists (an update, not a set): no read, and no
// transaction that concurrent work of the user would wait on; after an
// erasure, which deletes it, the update fails with NotFound and writes
// nothing.
func (db *DB) ChargeAfter(ctx context.Context, userID, day string, n int) error {
	opctx, cancel := db.op(ctx)
	defer cancel()
	_, err := db.dayRef(userID, day).Update(opctx, []firestore.Update{{Path: "tokens", Value: firestore.Increment(n)}})
	return translate(err)
}

// ChargeMemory adds n to the day's spend in a transaction that reads the
// user's memory document, so that an erasure (which deletes it) and a
// charge for a roll-up of it cannot both land.
func (db *DB) ChargeMemory(ctx context.Context, userID, day string, n int) error {
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		if _, err := tx.Get(db.memoryRef(userID)); isNotFound(err) {
			return errs.Errorf(errs.ENOTFOUND, "no long-term memory")
		} else if err != nil {
			return err
		}
		return tx.Set(db.dayRef(userID, day), map[string]any{"userId": userID, "day": day, "tokens": firestore.Increment(n)}, firestore.MergeAll)
	})
	return err
}

// spendOn adds n to the user's spend on ur's day in w, on condition that
// the day's document is as ur has it, so that a limit checked against ur
// holds when the commit lands.
func (db *DB) spendOn(w *writes, userID string, ur usageRead, n int) {
	ref := db.dayRef(userID, ur.day)
	if ur.dayTime.IsZero() {
		w.Create(ref, dayDoc{UserID: userID, Day: ur.day, Tokens: n})
		return
	}
	w.Update(ref, []firestore.Update{{Path: "tokens", Value: firestore.Increment(n)}}, firestore.LastUpdateTime(ur.dayTime))
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
		r.Minute, r.MinuteMessages, r.SearchMinute, r.MinuteSearches = d.Minute, d.MinuteMsgs, d.SearchMin, d.MinuteSrch
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

// UsageOn reads, in one batched read, the user's per-minute message quota, their
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
		r.Minute, r.MinuteMessages, r.SearchMinute, r.MinuteSearches = d.Minute, d.MinuteMsgs, d.SearchMin, d.MinuteSrch
	}
	if snaps[1].Exists() {
		var d dayDoc
		if err := dataTo(snaps[1], &d); err != nil {
			return nil, err
		}
		r.Days[day], r.Models, r.Bill = d.Tokens, d.Models, d.Bill
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
