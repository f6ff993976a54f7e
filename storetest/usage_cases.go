package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/kernel/errs"
)

// testUsage: chat.UsageStore. The per-minute message quota is read
// and written atomically, token spend is added without a read and never
// lost under concurrency, one day's standing is read with the quota and
// the turn slots (UsageOn), users are apart, and deleting a user's usage
// deletes all of it and counts it.
func testUsage(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	const day1, day2 = "2026-01-15", "2026-01-16"
	if r := Must[*chat.UsageRecord](t)(db.GetUsage(ctx, "alice")); r != nil {
		t.Fatalf("a new user has usage: %+v", r)
	}
	err := db.UpdateUsage(ctx, "alice", day1, func(u *chat.Usage) error {
		if u.UserID != "alice" || u.Day != day1 || u.DayTokens != 0 || u.Minute != 0 || u.MinuteMessages != 0 {
			return fmt.Errorf("the first read is not zero: %+v", *u)
		}
		u.Minute, u.MinuteMessages, u.SearchMinute, u.MinuteSearches = 100, 3, 101, 2
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := db.UpdateUsage(ctx, "alice", day1, func(u *chat.Usage) error { u.MinuteMessages = 99; return boom }); !errors.Is(err, boom) {
		t.Fatalf("an error of fn: %v, want it returned", err)
	}

	var wg sync.WaitGroup
	errc := make(chan error, 9)
	for range 8 {
		wg.Go(func() { errc <- db.AddTokens(ctx, "alice", day1, 5) })
	}
	wg.Go(func() { errc <- db.AddTokens(ctx, "alice", day2, 7) })
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	err = db.UpdateUsage(ctx, "alice", day1, func(u *chat.Usage) error {
		if u.DayTokens != 40 || u.Minute != 100 || u.MinuteMessages != 3 || u.SearchMinute != 101 || u.MinuteSearches != 2 {
			return fmt.Errorf("read %+v, want 40 tokens and the stored quotas (100, 3) and (101, 2)", *u)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	on := Must[*chat.UsageRecord](t)(db.UsageOn(ctx, "alice", day2, 4))
	if on.Minute != 100 || on.MinuteMessages != 3 || on.SearchMinute != 101 || on.MinuteSearches != 2 || !maps.Equal(on.Days, map[string]int{day2: 7}) || len(on.TurnMinutes) != 4 {
		t.Fatalf("alice's usage on %s: %+v", day2, on)
	}
	if on := Must[*chat.UsageRecord](t)(db.UsageOn(ctx, "carol", day1, 2)); on.Minute != 0 || on.Days[day1] != 0 || len(on.TurnMinutes) != 2 {
		t.Fatalf("a new user's usage on a day: %+v", on)
	}
	r := Must[*chat.UsageRecord](t)(db.GetUsage(ctx, "alice"))
	if r == nil || r.Minute != 100 || r.MinuteMessages != 3 || r.MinuteSearches != 2 || !maps.Equal(r.Days, map[string]int{day1: 40, day2: 7}) {
		t.Fatalf("alice's usage: %+v", r)
	}

	if err := db.AddTokens(ctx, "bob", day1, 1); err != nil {
		t.Fatal(err)
	}
	if b := Must[*chat.UsageRecord](t)(db.GetUsage(ctx, "bob")); b == nil || b.MinuteMessages != 0 || !maps.Equal(b.Days, map[string]int{day1: 1}) {
		t.Fatalf("bob's usage: %+v", b)
	}
	if n := Must[int](t)(db.DeleteUsage(ctx, "alice")); n != 3 {
		t.Errorf("deleting alice's usage counted %d documents, want 3 (the quota and two days)", n)
	}
	if r := Must[*chat.UsageRecord](t)(db.GetUsage(ctx, "alice")); r != nil {
		t.Errorf("alice's usage after deletion: %+v", r)
	}
	if n := Must[int](t)(db.DeleteUsage(ctx, "alice")); n != 0 {
		t.Errorf("deleting again counted %d", n)
	}
	if b := Must[*chat.UsageRecord](t)(db.GetUsage(ctx, "bob")); b == nil || b.Days[day1] != 1 {
		t.Errorf("bob's usage after alice's deletion: %+v", b)
	}
}

// testFencedCharges: chat.UsageStore's charges for work after a reply land
// only while what the work followed is there: the day's spend the reply
// or append wrote (ChargeAfter), or the user's long-term memory
// (ChargeMemory); after an erasure they are ENOTFOUND and write nothing.
func testFencedCharges(t *testing.T, e *Env) {
	ctx := context.Background()
	db := e.DB
	const day, next = "2026-01-15", "2026-01-16"
	if err := db.ChargeAfter(ctx, "alice", day, 5); errs.CodeOf(err) != errs.ENOTFOUND {
		t.Errorf("a charge on a day without spend: %v, want not found", err)
	}
	if err := db.AddTokens(ctx, "alice", day, 10); err != nil {
		t.Fatal(err)
	}
	if err := db.ChargeAfter(ctx, "alice", day, 5); err != nil {
		t.Fatal(err)
	}
	if err := db.ChargeAfter(ctx, "alice", next, 5); errs.CodeOf(err) != errs.ENOTFOUND {
		t.Errorf("a charge on another day: %v, want not found", err)
	}
	if on := Must[*chat.UsageRecord](t)(db.UsageOn(ctx, "alice", day, 0)); on.Days[day] != 15 {
		t.Errorf("alice spent %d on %s, want 15", on.Days[day], day)
	}
	Must[int](t)(db.DeleteUsage(ctx, "alice"))
	if err := db.ChargeAfter(ctx, "alice", day, 7); errs.CodeOf(err) != errs.ENOTFOUND {
		t.Errorf("a charge after the erasure: %v, want not found", err)
	}
	if err := db.ChargeMemory(ctx, "alice", day, 3); errs.CodeOf(err) != errs.ENOTFOUND {
		t.Errorf("a memory charge without memory: %v, want not found", err)
	}
	if r := Must[*chat.UsageRecord](t)(db.GetUsage(ctx, "alice")); r != nil {
		t.Errorf("alice has usage after the erasure: %+v", r)
	}
}
