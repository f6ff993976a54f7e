package cache_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"cloud.google.com/go/firestore"
	"github.com/chatmemory/backend/cache"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/storetest"
)

// twoInstances is two instances' caches in front of one store of kind
// ("memory": the in-process store; "firestore": the emulator), and
// services on the first.
func twoInstances(t *testing.T, kind string) (one, other *cache.Store, e *storetest.Env) {
	if kind == "memory" {
		db := inprocdb.New()
		one, other = cache.New(db, cache.DefaultBytes), cache.New(db, cache.DefaultBytes)
	} else {
		client, _ := emulatortest.Firestore(t)
		one, other = instance(client), instance(client)
	}
	return one, other, storetest.NewEnv(t, one)
}

// onBoth runs test on both kinds of store.
func onBoth(t *testing.T, test func(t *testing.T, kind string)) {
	for _, kind := range []string{"memory", "firestore"} {
		t.Run(kind, func(t *testing.T) { test(t, kind) })
	}
}

// countedInstances is twoInstances with a count of what their Firestore
// client does.
func countedInstances(t *testing.T) (one, other *cache.Store, e *storetest.Env, counter *firestoretest.Counter) {
	counter = &firestoretest.Counter{}
	client, _ := emulatortest.FirestoreWith(t, func(ctx context.Context, project string) (*firestore.Client, error) {
		return firestoretest.Dial(ctx, project, counter)
	})
	one, other = instance(client), instance(client)
	return one, other, storetest.NewEnv(t, one), counter
}

// TestKeptContextIsNotTrusted: an instance that kept a session's context
// from a read starts an append given that version from it; when another
// instance wrote meanwhile, the commit planned from it is refused, and the
// append reads the current version and plans again (here: refuses, as the
// domain does for a stale ifMatch), leaving the other's write alone.
func TestKeptContextIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	one, other, e := twoInstances(t, "firestore") // the in-process store appends from a read: it plans nothing from what was kept
	s := e.NewSession(t, "alice")
	e.Say(t, s, history.RoleUser, "first")
	day := "2026-01-15"
	read, err := one.RunTurn(ctx, chat.TurnQuery{UserID: "alice", SessionID: s.ID, Day: day}, nil,
		func(*chat.TurnState) (*chat.TurnWrite, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	v0 := read.ContextVersion
	appendOne := func(db *cache.Store, q chat.AppendQuery, text string, seen *[]string) (string, error) {
		plan, err := e.History.PlanFor(q.UserID, q.SessionID, q.Key, history.Draft{Role: history.RoleUser, Content: text})
		if err != nil {
			t.Fatal(err)
		}
		return db.RunAppend(ctx, q, func(st *chat.AppendState) (*chat.AppendWrite, error) {
			*seen = append(*seen, st.Version)
			if q.IfMatch != "" && st.Version != q.IfMatch {
				return nil, errs.Errorf(errs.ECHANGED, "changed")
			}
			ss, tl := st.Session.Clone(), st.Tail.Clone()
			msgs, err := plan(ss, tl, st.Stored)
			if err != nil {
				return nil, err
			}
			return &chat.AppendWrite{Session: ss, Tail: tl, Messages: msgs, Quota: st.Usage}, nil
		})
	}
	var seenOther, seenOne []string
	v1, err := appendOne(other, chat.AppendQuery{UserID: "alice", SessionID: s.ID, Day: day}, "by the other instance", &seenOther)
	if err != nil || v1 == v0 {
		t.Fatalf("the other instance's append: %q, %v", v1, err)
	}
	_, err = appendOne(one, chat.AppendQuery{UserID: "alice", SessionID: s.ID, Day: day, IfMatch: v0}, "stale", &seenOne)
	storetest.WantCode(t, err, errs.ECHANGED)
	if !slices.Equal(seenOne, []string{v0, v1}) {
		t.Errorf("the append planned at %q, want the kept %q and then the current %q", seenOne, v0, v1)
	}
	all := e.All(t, e.Reload(t, s))
	if len(all) != 2 || all[1].Content != "by the other instance" {
		t.Errorf("stored %+v", all)
	}
}

// TestKeptUsageIsNotTrusted: an append given the version this instance
// just wrote, by a user whose last append ran here, plans from what it
// kept of their window and spend without reading; when another instance
// appended for them meanwhile, that commit is refused, and the append
// reads and counts both; so too when only the day's spend changed. A key
// stored before is found by the commit's Create, and the batch under it
// read as another request's.
func TestKeptUsageIsNotTrusted(t *testing.T) {
	ctx := context.Background()
	one, other, e := twoInstances(t, "firestore") // the in-process store appends from a read: it plans nothing from what was kept
	s, elsewhere := e.NewSession(t, "alice"), e.NewSession(t, "alice")
	const day, minute = "2026-01-15", int64(29_000_000)
	type seen struct {
		minuteMessages, dayTokens, stored int
		mayHaveLanded                     bool
	}
	appendOne := func(db *cache.Store, q chat.AppendQuery, text string, plans *[]seen) string {
		t.Helper()
		q.UserID, q.Day = "alice", day
		plan, err := e.History.PlanFor(q.UserID, q.SessionID, q.Key, history.Draft{Role: history.RoleUser, Content: text})
		if err != nil {
			t.Fatal(err)
		}
		v, err := db.RunAppend(ctx, q, func(st *chat.AppendState) (*chat.AppendWrite, error) {
			*plans = append(*plans, seen{st.Usage.MinuteMessages, st.Usage.DayTokens, len(st.Stored), st.MayHaveLanded})
			ss, tl := st.Session.Clone(), st.Tail.Clone()
			msgs, err := plan(ss, tl, st.Stored)
			if err != nil || len(msgs) == 0 {
				return nil, err
			}
			u := st.Usage
			u.Minute, u.MinuteMessages = minute, u.MinuteMessages+len(msgs)
			return &chat.AppendWrite{Session: ss, Tail: tl, Messages: msgs, Quota: u, Tokens: 5}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var plans []seen
	v := appendOne(one, chat.AppendQuery{SessionID: s.ID}, "first", &plans)
	appendOne(other, chat.AppendQuery{SessionID: elsewhere.ID}, "by the other instance", &plans)
	plans = nil
	v = appendOne(one, chat.AppendQuery{SessionID: s.ID, IfMatch: v}, "second", &plans)
	if want := []seen{{1, 5, 0, false}, {2, 10, 0, false}}; !slices.Equal(plans, want) {
		t.Errorf("the append planned with %+v, want what it kept and then what it read: %+v", plans, want)
	}
	plans = nil
	v = appendOne(one, chat.AppendQuery{SessionID: s.ID, IfMatch: v, Key: "k"}, "keyed", &plans)
	if want := []seen{{3, 15, 0, false}}; !slices.Equal(plans, want) {
		t.Errorf("the keyed append planned with %+v, want only what it kept: %+v", plans, want)
	}
	plans = nil
	v = appendOne(one, chat.AppendQuery{SessionID: s.ID, IfMatch: v, Key: "k"}, "keyed", &plans)
	if want := []seen{{4, 20, 0, false}, {4, 20, 1, false}}; !slices.Equal(plans, want) {
		t.Errorf("the key's retry planned with %+v, want what it kept and then the stored batch: %+v", plans, want)
	}
	// Spend elsewhere (a turn's, on another instance) changes only the day.
	if err := other.AddTokens(ctx, "alice", day, 7); err != nil {
		t.Fatal(err)
	}
	plans = nil
	appendOne(one, chat.AppendQuery{SessionID: s.ID, IfMatch: v}, "after spend elsewhere", &plans)
	if want := []seen{{4, 20, 0, false}, {4, 27, 0, false}}; !slices.Equal(plans, want) {
		t.Errorf("after spend elsewhere the append planned with %+v, want what it kept and then what it read: %+v", plans, want)
	}
	var u chat.Usage
	if err := one.UpdateUsage(ctx, "alice", day, func(got *chat.Usage) error { u = *got; return nil }); err != nil {
		t.Fatal(err)
	}
	if u.MinuteMessages != 5 || u.DayTokens != 32 {
		t.Errorf("stored: %d messages this minute and %d tokens, want 5 and 32", u.MinuteMessages, u.DayTokens)
	}
	if n := len(e.All(t, e.Reload(t, s))); n != 4 {
		t.Errorf("%d messages in the session, want 4", n)
	}
}

// TestKeptTurnIsNotTrusted: a turn on the instance that ran the session's
// last turn plans its claim from what it kept, without reading; when
// another instance wrote the session meanwhile, that claim is refused
// whole, and the turn reads and plans again after the other's message.
func TestKeptTurnIsNotTrusted(t *testing.T) {
	onBoth(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		one, other, e := twoInstances(t, kind)
		s := e.NewSession(t, "alice")
		q := chat.TurnQuery{UserID: "alice", SessionID: s.ID, Day: "2026-01-15", Slots: []int{0, 1}}
		say := func(db *cache.Store, text string) []int {
			t.Helper()
			var lasts []int // the seq of the last message of each tail planned from
			_, err := db.RunTurn(ctx, q, nil, func(st *chat.TurnState) (*chat.TurnWrite, error) {
				last := -1
				if n := len(st.Tail.Messages); n > 0 {
					last = st.Tail.Messages[n-1].Seq
				}
				lasts = append(lasts, last)
				ss := st.Session.Clone()
				m, tl, err := e.History.AppendOne(ss, st.Tail, "", "", history.Draft{Role: history.RoleUser, Content: text})
				if err != nil {
					return nil, err
				}
				m.ID = fmt.Sprint("m-", text)
				return &chat.TurnWrite{Session: ss, Tail: tl, Messages: []history.Message{m}, Slot: chat.NoSlot}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return lasts
		}
		say(one, "a")
		if lasts := say(one, "b"); !slices.Equal(lasts, []int{0}) {
			t.Errorf("the second turn here planned after %v, want once, after the first", lasts)
		}
		say(other, "c")
		if lasts := say(one, "d"); !slices.Equal(lasts, []int{1, 2}) {
			t.Errorf("the turn after another instance's planned after %v, want what it kept and then what it read", lasts)
		}
		var got []string
		for _, m := range e.All(t, e.Reload(t, s)) {
			got = append(got, fmt.Sprint(m.Seq, m.Content))
		}
		if want := []string{"0a", "1b", "2c", "3d"}; !slices.Equal(got, want) {
			t.Errorf("stored %q, want %q", got, want)
		}
	})
}
