// Package storetest is the contract every storage backend passes: one suite
// over every storage interface the domain packages declare, run by the
// tests of firestoredb and inprocdb alike, so the two cannot drift. It
// drives the backends through the services where they exist, and through
// the interfaces themselves otherwise.
package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/clock/clocktest"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/paging"
	"github.com/chatmemory/backend/sessions"
	"github.com/chatmemory/backend/storage"
)

// Backend is a storage backend (storage.Store, declared once there).
type Backend = storage.Store

// Env is one backend with services on a fake clock.
type Env struct {
	DB       Backend
	Clock    *clocktest.Clock
	Sessions *sessions.Service
	History  *history.Service
	Tokens   *history.TikToken
}

// Epoch is where every fake clock starts.
var Epoch = time.Date(2026, 1, 15, 9, 0, 0, 0, time.UTC)

var tokens = sync.OnceValues(history.NewTikToken)

// WantCode fails tb unless err carries code.
func WantCode(tb testing.TB, err error, code errs.Code) {
	tb.Helper()
	if got := errs.CodeOf(err); got != code {
		tb.Fatalf("error code = %q, want %q (err: %v)", got, code, err)
	}
}

// NewSession creates an active session of user.
func (e *Env) NewSession(tb testing.TB, user string) *sessions.Session {
	tb.Helper()
	return Must[*sessions.Session](tb)(e.Sessions.Create(context.Background(), user, sessions.CreateInput{}))
}

// Say appends one message of role with content.
func (e *Env) Say(tb testing.TB, s *sessions.Session, role history.Role, content string) history.Message {
	tb.Helper()
	msgs := Must[[]history.Message](tb)(e.Append(context.Background(), s, "", history.Draft{Role: role, Content: content}))
	return msgs[0]
}

// All reads every message of s, of every branch, oldest first.
func (e *Env) All(tb testing.TB, s *sessions.Session) []history.Message {
	tb.Helper()
	var all []history.Message
	req := history.PageRequest{Limit: paging.MaxSize, All: true}
	for {
		p := Must[*history.Page](tb)(e.History.Page(context.Background(), s, req))
		all = append(all, p.Messages...)
		if p.NextPageToken == "" {
			return all
		}
		req.PageToken = p.NextPageToken
	}
}

// Run runs the contract suite. open returns a new, empty backend for a test.
func Run(t *testing.T, open func(t *testing.T) Backend) {
	env := func(t *testing.T) *Env { t.Parallel(); return NewEnv(t, open(t)) }
	t.Run("SessionCreateGet", func(t *testing.T) { testCreateGet(t, env(t)) })
	t.Run("SessionCreateInvalid", func(t *testing.T) { testCreateInvalid(t, env(t)) })
	t.Run("SessionUpdate", func(t *testing.T) { testUpdate(t, env(t)) })
	t.Run("Lifecycle", func(t *testing.T) { testLifecycle(t, env(t)) })
	t.Run("ListPagination", func(t *testing.T) { testListPagination(t, env(t)) })
	t.Run("ListTies", func(t *testing.T) { testListTies(t, env(t)) })
	t.Run("AppendAndRead", func(t *testing.T) { testAppendAndRead(t, env(t)) })
	t.Run("Idempotency", func(t *testing.T) { testIdempotency(t, env(t)) })
	t.Run("AppendNotWritable", func(t *testing.T) { testAppendNotWritable(t, env(t)) })
	t.Run("AppendOtherUser", func(t *testing.T) { testAppendOtherUser(t, env(t)) })
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, env(t)) })
	t.Run("ToolExchanges", func(t *testing.T) { testToolExchanges(t, env(t)) })
	t.Run("Purge", func(t *testing.T) { testPurge(t, env(t)) })
	t.Run("ConcurrentAppends", func(t *testing.T) { testConcurrentAppends(t, env(t)) })
	t.Run("Turns", func(t *testing.T) { testTurns(t, env(t)) })
	t.Run("Jobs", func(t *testing.T) { testJobs(t, env(t)) })
	t.Run("Appends", func(t *testing.T) { testAppends(t, env(t)) })
	t.Run("Drafts", func(t *testing.T) { testDrafts(t, env(t)) })
	t.Run("Branches", func(t *testing.T) { testBranches(t, env(t)) })
	t.Run("Usage", func(t *testing.T) { testUsage(t, env(t)) })
	t.Run("FencedCharges", func(t *testing.T) { testFencedCharges(t, env(t)) })
	t.Run("Accounts", func(t *testing.T) { testAccounts(t, env(t)) })
	t.Run("Holders", func(t *testing.T) { testHolders(t, env(t)) })
	t.Run("LongTermRepo", func(t *testing.T) { testLongTermRepo(t, env(t)) })
	t.Run("RetentionRepo", func(t *testing.T) { testRetentionRepo(t, env(t)) })
	t.Run("PrivacyRepo", func(t *testing.T) { testPrivacyRepo(t, env(t)) })
	t.Run("Recall", func(t *testing.T) { testRecall(t, env(t)) })
	t.Run("Visibility", func(t *testing.T) { testVisibility(t, env(t)) })
	t.Run("Lexical", func(t *testing.T) { testLexical(t, env(t)) })
	t.Run("RecallBackfill", func(t *testing.T) { testRecallBackfill(t, env(t)) })
	t.Run("Feedback", func(t *testing.T) { testFeedback(t, env(t)) })
	t.Run("TrimRepo", func(t *testing.T) { testTrimRepo(t, env(t)) })
	t.Run("UnitsGone", func(t *testing.T) { testUnitsGone(t, env(t)) })
	t.Run("RollUpRepo", func(t *testing.T) { testRollUpRepo(t, env(t)) })
	t.Run("DeletedList", func(t *testing.T) { testDeletedList(t, env(t)) })
	t.Run("UpdateSessions", func(t *testing.T) { testUpdateSessions(t, env(t)) })
	t.Run("AttachmentRecords", func(t *testing.T) { testAttachmentRecords(t, env(t)) })
	t.Run("AttachmentQuota", func(t *testing.T) { testAttachmentQuota(t, env(t)) })
	t.Run("AttachmentFence", func(t *testing.T) { testAttachmentFence(t, env(t)) })
}

// NewEnv wires services around db.
func NewEnv(tb testing.TB, db Backend) *Env {
	tb.Helper()
	clock := clocktest.NewClock(Epoch)
	tok := Tokens(tb)
	ss := sessions.NewService(db, "gpt-4o-mini")
	ss.Now = clock.Now
	hs := history.NewService(db, tok)
	hs.Now = clock.Now
	return &Env{DB: db, Clock: clock, Sessions: ss, History: hs, Tokens: tok}
}

// Tokens returns the shared tiktoken counter, loaded once per test binary.
func Tokens(tb testing.TB) *history.TikToken {
	tb.Helper()
	t, err := tokens()
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// EachBackend runs f once per backend, as parallel subtests named after
// them; f opens a new, empty backend with open as often as it needs one.
func EachBackend[S any](t *testing.T, backends map[string]func(*testing.T) S, f func(t *testing.T, open func(*testing.T) S)) {
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, open)
		})
	}
}

func asTransition(err error, te **sessions.TransitionError) bool { return errors.As(err, te) }

// Purge soft-deletes s (if it is not already) and purges it as its owner.
func (e *Env) Purge(tb testing.TB, user string, s *sessions.Session) {
	tb.Helper()
	ctx := context.Background()
	if cur := e.Reload(tb, s); cur.Status != sessions.StatusDeleted {
		Must[*sessions.Session](tb)(e.Sessions.Delete(ctx, user, s.ID))
	}
	Must[int](tb)(PurgeAs(ctx, e.Sessions, user, s.ID))
}

// PurgeAs purges userID's soft-deleted session id now, as the retention
// sweep does once its recovery window has passed (an API has no purge):
// ENOTFOUND unless userID owns it, EPRECONDITION unless it is deleted. It
// returns the number of documents deleted.
func PurgeAs(ctx context.Context, svc *sessions.Service, userID, id string) (int, error) {
	now := clock.Stored(svc.Now)
	return svc.Repo.PurgeSession(ctx, id, func(s *sessions.Session) error {
		if err := s.CheckOwner(userID); err != nil {
			return err
		}
		return s.Apply(sessions.ActionPurge, now, svc.Policy)
	}, svc.Forget)
}

// Reload reads a session again as its owner.
func (e *Env) Reload(tb testing.TB, s *sessions.Session) *sessions.Session {
	tb.Helper()
	return Must[*sessions.Session](tb)(e.Sessions.Get(context.Background(), s.UserID, s.ID))
}

// Must fails tb on err.
func Must[T any](tb testing.TB) func(T, error) T {
	return func(v T, err error) T {
		tb.Helper()
		if err != nil {
			tb.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}
