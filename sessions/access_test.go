package sessions

import (
	"errors"
	"testing"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

// errKeyed stands for the conflict of a key whose request is in progress.
var errKeyed = errors.New("in progress")

func TestCheckClaim(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	turn := Operation{Kind: OpTurn}
	edit := Operation{Kind: OpEdit, Target: "m1"}
	lease := func(key, token string, op Operation, until time.Time) *Answering {
		return &Answering{Seq: 3, Key: key, Token: token, Op: op, Until: until}
	}
	for _, tc := range []struct {
		name   string
		none   bool // no session was read
		status Status
		a      *Answering
		claim  Claim
		owner  bool // refused as not found (none, or another's)
		own    bool
		reused bool
		busy   error // errs.ECONFLICT with this cause (nil: none), or no conflict
		keyed  bool  // the conflict is the key's request in progress
		write  bool  // refused as not writable
	}{
		{name: "free", claim: Claim{UserID: "u", At: now}},
		{name: "no session", none: true, claim: Claim{SessionID: "s", UserID: "u", At: now}, owner: true},
		{name: "a session to start", none: true, claim: Claim{SessionID: "s", UserID: "u", New: true, At: now}},
		{name: "another user", claim: Claim{UserID: "v", At: now}, owner: true},
		{name: "no user", claim: Claim{At: now}, owner: true},
		{name: "archived", status: StatusArchived, claim: Claim{UserID: "u", At: now}, write: true},
		{name: "own lease", a: lease("", "tok", turn, now.Add(time.Minute)), claim: Claim{UserID: "u", Token: "tok", At: now},
			own: true, busy: ErrBusy},
		{name: "own lease ran out", a: lease("", "tok", turn, now), claim: Claim{UserID: "u", Token: "tok", At: now}, own: true},
		{name: "another's lease", a: lease("", "x", turn, now.Add(time.Minute)), claim: Claim{UserID: "u", Token: "tok", At: now}, busy: ErrBusy},
		{name: "lease ran out", a: lease("k", "x", turn, now), claim: Claim{UserID: "u", Key: "k", Op: edit, At: now}},
		{name: "same key in progress", a: lease("k", "x", turn, now.Add(time.Minute)), claim: Claim{UserID: "u", Key: "k", Op: turn, At: now},
			busy: errKeyed, keyed: true},
		{name: "same key, another operation", a: lease("k", "x", turn, now.Add(time.Minute)), claim: Claim{UserID: "u", Key: "k", Op: edit, At: now},
			reused: true, busy: errKeyed, keyed: true},
		{name: "another key", a: lease("k", "x", turn, now.Add(time.Minute)), claim: Claim{UserID: "u", Key: "j", Op: edit, At: now}, busy: ErrBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{ID: "s", UserID: "u", Status: StatusActive, Bookkeeping: Bookkeeping{Answering: tc.a}}
			if tc.status != "" {
				s.Status = tc.status
			}
			if tc.none {
				s = nil
			}
			got := CheckClaim(s, tc.claim)
			if (got.Access != nil) != tc.owner || (tc.owner && errs.CodeOf(got.Access) != errs.ENOTFOUND) {
				t.Errorf("Access = %v, want refused %v", got.Access, tc.owner)
			}
			if (got.Own != nil) != tc.own || (tc.own && got.Own != tc.a) {
				t.Errorf("Own = %v, want own %v", got.Own, tc.own)
			}
			if got.Reused != tc.reused {
				t.Errorf("Reused = %v, want %v", got.Reused, tc.reused)
			}
			if (got.Writable != nil) != tc.write || (tc.write && errs.CodeOf(got.Writable) != errs.EPRECONDITION) {
				t.Errorf("Writable = %v, want refused %v", got.Writable, tc.write)
			}
			switch {
			case tc.busy == nil && got.Busy != nil:
				t.Errorf("Busy = %v, want none", got.Busy)
			case tc.busy != nil && errs.CodeOf(got.Busy) != errs.ECONFLICT:
				t.Errorf("Busy = %v, want a conflict", got.Busy)
			case tc.busy != nil && errors.Is(got.Busy, ErrBusy) == tc.keyed:
				t.Errorf("Busy = %v: caused by ErrBusy %v, want %v", got.Busy, errors.Is(got.Busy, ErrBusy), !tc.keyed)
			case tc.busy != nil && errs.RetryAfter(got.Busy) != MaxRetryAfter:
				t.Errorf("Busy retries after %v, want %v", errs.RetryAfter(got.Busy), MaxRetryAfter)
			}
		})
	}
}
