package retention

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/parallel"
	"github.com/chatmemory/backend/sessions"
)

// An account deleted in Firebase Auth can no longer call the API, so
// nobody could erase its data but the backend itself. Two things do: the
// platform's user-deleted event, which erases at once (EraseDeleted), and
// the daily sweep's backstop for an event that never arrived (the function
// was down, or deployed after the deletion), which asks Auth about
// accounts that have not shown themselves alive for a while, a hundred in
// one call, and erases those Auth no longer knows.

// Account is a user who holds data, with when they last showed themselves
// alive: a session created, or an account that Auth still knew when the
// backstop last asked.
type Account struct {
	UserID string
	SeenAt time.Time
}

// AccountCursor is the position after which a page of accounts starts.
type AccountCursor struct {
	SeenAt time.Time
	UserID string
}

// AccountStore keeps who holds data and when they were last seen alive.
// The commit that creates a user's first document of a kind (a session,
// their memory, their usage window) records them as seen; erasure deletes
// the record with the rest.
type AccountStore interface {
	// AccountsSeenBefore returns up to limit accounts last seen before t,
	// by SeenAt then UserID, after cursor (nil: from the first).
	AccountsSeenBefore(ctx context.Context, t time.Time, after *AccountCursor, limit int) ([]Account, error)
	// MarkSeen records userIDs as seen alive at at (those not recorded
	// any more, erased meanwhile, are left alone).
	MarkSeen(ctx context.Context, userIDs []string, at time.Time) error
	// RecordAccount records userID as seen at at, unless they are
	// recorded already (their record is left as it is).
	RecordAccount(ctx context.Context, userID string, at time.Time) error
	// SessionsAfter pages every user's sessions by id.
	SessionsAfter(ctx context.Context, after string, limit int) ([]*sessions.Session, error)
	// HoldersAfter pages the users who hold long-term memory or usage
	// (what a user may hold without a session), each with when it was
	// last written, after the cursor the previous page returned ("": from
	// the first); next is "" after the last page.
	HoldersAfter(ctx context.Context, after string, limit int) (page []Account, next string, err error)
}

// Directory tells which accounts the sign-in service still knows.
type Directory interface {
	// Missing returns those of userIDs (at most DirectoryBatch) that no
	// longer exist.
	Missing(ctx context.Context, userIDs []string) ([]string, error)
}

// DirectoryBatch is how many accounts one Directory call asks about
// (Firebase Auth's GetUsers takes at most 100).
const DirectoryBatch = 100

// eraseWorkers is how many accounts deleted in Auth the backstop erases
// at once (each erasure touches only its user's documents).
const eraseWorkers = 4

// DefaultCheckAfter is how long an account may go unseen before the
// backstop asks about it: each account costs at most one hundredth of an
// Auth call in that time, however many days the sweep runs.
const DefaultCheckAfter = 30 * 24 * time.Hour

// Backstop erases the data of accounts deleted in Auth whose deletion
// event never came.
type Backstop struct {
	Accounts   AccountStore
	Directory  Directory
	Privacy    *Privacy
	CheckAfter time.Duration // 0: DefaultCheckAfter
	Now        func() time.Time
	Log        *slog.Logger
}

// BackstopReport is what one run of the backstop did.
type BackstopReport struct {
	Checked    int  `json:"accountsChecked"`
	Erased     int  `json:"accountsErased"`
	AuthCalls  int  `json:"authCalls"`
	Documents  int  `json:"documentsDeleted"`
	Complete   bool `json:"complete"`
	Failed     int  `json:"failed"`
	DurationMs int64
}

// Counts are what the run did by name, as a sweep report's phase shows
// them (complete is 1 or 0).
func (r BackstopReport) Counts() map[string]int {
	return map[string]int{"accountsChecked": r.Checked, "accountsErased": r.Erased, "authCalls": r.AuthCalls,
		"documentsDeleted": r.Documents, "failed": r.Failed, "complete": b2i(r.Complete)}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Run asks Auth, a hundred at a time, about the accounts not seen for
// CheckAfter, erases those it no longer knows and records the rest as
// seen now, until none is left or out says to stop. An erasure that fails
// is logged and left to the next run (its account stays unseen).
func (b *Backstop) Run(ctx context.Context, out func() bool) (BackstopReport, error) {
	start := time.Now()
	var r BackstopReport
	now := clock.Stored(b.Now)
	after := b.CheckAfter
	if after <= 0 {
		after = DefaultCheckAfter
	}
	var cursor *AccountCursor
	for !out() {
		page, err := b.Accounts.AccountsSeenBefore(ctx, now.Add(-after), cursor, DirectoryBatch)
		if err != nil || len(page) == 0 {
			r.Complete = err == nil
			r.DurationMs = time.Since(start).Milliseconds()
			return r, err
		}
		last := page[len(page)-1]
		cursor = &AccountCursor{SeenAt: last.SeenAt, UserID: last.UserID}
		if err := b.check(ctx, page, now, &r); err != nil {
			r.DurationMs = time.Since(start).Milliseconds()
			return r, err
		}
	}
	r.DurationMs = time.Since(start).Milliseconds()
	return r, nil
}

// RecordAll records every user who holds data and has no record yet, as
// seen at their first session's last activity, or when their memory or
// usage was last written (so that the next runs ask Auth about those
// unseen for 30 days): a one-off for data stored before every first write
// recorded its user. It pages every session by id, then the users who
// hold memory or usage, and returns how many users it looked at.
func (b *Backstop) RecordAll(ctx context.Context) (int, error) {
	r := &recording{store: b.Accounts, seen: map[string]bool{}}
	err := r.sessionOwners(ctx)
	if err == nil {
		err = r.holders(ctx)
	}
	return len(r.seen), err
}

// recording is a run of RecordAll: the users it looked at.
type recording struct {
	store AccountStore
	seen  map[string]bool
}

// sessionOwners records the owner of every session, as of the first of
// their sessions by id.
func (r *recording) sessionOwners(ctx context.Context) error {
	for after := ""; ; {
		page, err := r.store.SessionsAfter(ctx, after, 500)
		if err != nil {
			return err
		}
		for _, s := range page {
			if err := r.record(ctx, s.UserID, s.LastActivityAt); err != nil {
				return err
			}
		}
		if len(page) < 500 {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// holders records every user who holds memory or usage.
func (r *recording) holders(ctx context.Context) error {
	for after := ""; ; {
		page, next, err := r.store.HoldersAfter(ctx, after, 500)
		if err != nil {
			return err
		}
		for _, a := range page {
			if err := r.record(ctx, a.UserID, a.SeenAt); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// record records uid as seen at at, unless this run did.
func (r *recording) record(ctx context.Context, uid string, at time.Time) error {
	if r.seen[uid] {
		return nil
	}
	r.seen[uid] = true
	return r.store.RecordAccount(ctx, uid, at)
}

// check asks about one page of accounts and acts on the answer.
func (b *Backstop) check(ctx context.Context, page []Account, now time.Time, r *BackstopReport) error {
	ids := make([]string, len(page))
	for i, a := range page {
		ids[i] = a.UserID
	}
	missing, err := b.Directory.Missing(ctx, ids)
	r.AuthCalls++
	if err != nil {
		return err
	}
	r.Checked += len(ids)
	gone := map[string]bool{}
	for _, uid := range missing {
		gone[uid] = true
	}
	var alive, erase []string
	for _, uid := range ids {
		if gone[uid] {
			erase = append(erase, uid)
		} else {
			alive = append(alive, uid)
		}
	}
	var mu sync.Mutex
	parallel.Each(len(erase), eraseWorkers, func(i int) {
		e, err := b.Privacy.Erase(ctx, erase[i])
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			r.Failed++
			if b.Log != nil {
				b.Log.ErrorContext(ctx, "erasing an account deleted in Auth failed; the next run tries again", "code", string(errs.CodeOf(err)))
			}
			return
		}
		r.Erased++
		r.Documents += e.Documents
	})
	if len(alive) == 0 {
		return nil
	}
	return b.Accounts.MarkSeen(ctx, alive, now)
}
