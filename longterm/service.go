package longterm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/strictjson"
	"github.com/chatmemory/backend/sessions"
)

// Model answers one instruction with text (JSON, here).
type Model interface {
	Complete(ctx context.Context, model, system, user string) (string, error)
}

// Store stores users' memory: the memory (the block, the profile and the
// history), its live facts, and the superseded facts apart, for audit.
type Store interface {
	// GetUser returns a user's memory with its live facts, or a new one if
	// none.
	GetUser(ctx context.Context, userID string) (*User, error)
	// LiveFacts returns the user's live facts, for a memory read without
	// them (User.Partial).
	LiveFacts(ctx context.Context, userID string) ([]Fact, error)
	// ListSuperseded returns the user's superseded facts.
	ListSuperseded(ctx context.Context, userID string) ([]Fact, error)
	// SaveMemory writes u (live facts included, Version bumped) with the
	// change to the superseded facts, atomically, if the stored version is
	// still version (else ECONFLICT) and every session in c.Sources still
	// exists and belongs to userID (else ErrSourceGone).
	SaveMemory(ctx context.Context, userID string, version int64, u *User, c Change) error
	// EraseMemory deletes the user's memory document and every fact.
	EraseMemory(ctx context.Context, userID string) (int, error)
}

// Change is what a save does besides writing the user's document.
type Change struct {
	File    []Fact   // superseded facts to file (or refile, changed)
	Drop    []string // ids of superseded facts to delete
	Sources []string // the sessions what is saved was learned from: the fence
	// KeepFacts tells that the live facts are as read: a store need not
	// write them again.
	KeepFacts bool
}

// Embedder turns texts into vectors of one length, in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Model() string
}

// SessionStore moves a session's learning watermark.
type SessionStore interface {
	UpdateSession(ctx context.Context, id string, fn func(*sessions.Session) error) (*sessions.Session, error)
}

// MessageReader reads a session's messages by seq.
type MessageReader interface {
	MessageRange(ctx context.Context, sessionID string, from, to int) ([]history.Message, error)
}

// Service learns, serves and forgets users' long-term memory.
type Service struct {
	Store    Store
	Sessions SessionStore
	Messages MessageReader
	Model    Model
	Tokens   TokenCounter
	// Embedder, if set, embeds facts: a new fact near a known one is
	// merged into it, and a turn chooses facts by relevance.
	Embedder Embedder
	Settings Settings
	Now      func() time.Time
	Log      *slog.Logger
	// Rolls is what the history's roll-up reads; HistoryModel the model
	// that writes its notes.
	Rolls        RollUpStore
	HistoryModel string
}

// Block returns the user's memory block and its tokens: one read, whatever
// the user knows. It is empty when memory is off or holds nothing.
func (svc *Service) Block(ctx context.Context, userID string) (string, int, error) {
	u, err := svc.Store.GetUser(ctx, userID)
	if err != nil || u.Disabled {
		return "", 0, err
	}
	return u.Block, u.BlockTokens, nil
}

// maxBatch bounds the messages one extraction reads.
const maxBatch = 50

// Learn extracts memory from the messages of s that it has not learned from
// yet, once at least EveryK of them have accumulated. The batch is claimed by
// moving the session's watermark in a transaction, so two instances never
// learn from the same batch, and at most one extraction runs per K messages.
// If extraction fails (the model or storage did not answer), the batch is
// given back unless another instance moved the watermark meanwhile, so the
// next turn tries again with it; output the model got wrong is logged and
// the batch counts as done, so bad output is never paid for twice.
func (svc *Service) Learn(ctx context.Context, s *sessions.Session, model string) error {
	from, to := s.Bookkeeping.LearnFrom, s.NextSeq-1
	if to-from+1 < svc.Settings.EveryK {
		return ErrNothingToLearn
	}
	var b Batch
	var ok bool
	_, err := svc.Sessions.UpdateSession(ctx, s.ID, func(cur *sessions.Session) error {
		if cur.Bookkeeping.LearnFrom != from {
			return ErrBatchTaken
		}
		b, ok = svc.Claim(cur)
		return nil
	})
	if err != nil {
		return err
	}
	if !ok {
		return ErrNothingToLearn
	}
	return svc.LearnClaimed(ctx, s, model, b)
}

// between returns msgs with from <= seq <= to if msgs hold all of them.
func between(msgs []history.Message, from, to int) []history.Message {
	var out []history.Message
	for _, m := range msgs {
		if m.Seq >= from && m.Seq <= to {
			out = append(out, m)
		}
	}
	if len(out) != to-from+1 {
		return nil
	}
	return out
}

// Batch is a range of a session's messages claimed for learning, and
// those of its messages the claimer had at hand (a turn has the latest in
// its context), which spare reading them again.
type Batch struct {
	From, To int
	Have     []history.Message
	// User is the user's memory as the claimer read it (a turn reads it
	// for its block), nil if it did not: the first try starts from it
	// instead of reading it again, and saving it checks it is current.
	User *User
}

// Claim moves the watermark of s past its unlearned messages when at least
// EveryK of them have accumulated, and returns them. It only changes s: a
// caller stores s (a turn does so in the commit of its reply, so claiming
// costs no round trip of its own) and then calls LearnClaimed. For a
// session nothing may be learned from, the watermark moves on and the
// batch is empty.
func (svc *Service) Claim(s *sessions.Session) (Batch, bool) {
	from, to := s.Bookkeeping.LearnFrom, s.NextSeq-1
	if to-from+1 < svc.Settings.EveryK {
		return Batch{}, false
	}
	s.Bookkeeping.LearnFrom = to + 1
	if s.NoLearning {
		return Batch{}, false // nothing from here is learned later
	}
	return Batch{From: from, To: to}, true
}

// LearnClaimed extracts memory from the batch Claim claimed in s. If
// extraction fails (the model or storage did not answer), the batch is
// given back unless another instance moved the watermark meanwhile, so the
// next turn tries again with it.
func (svc *Service) LearnClaimed(ctx context.Context, s *sessions.Session, model string, b Batch) error {
	from, to := b.From, b.To
	claimed := from
	if to-from+1 > maxBatch {
		from = to - maxBatch + 1
	}
	var err error
	for attempt, u := 0, b.User; ; attempt, u = attempt+1, nil {
		err = svc.extract(ctx, s, model, from, to, b.Have, u)
		if errs.CodeOf(err) != errs.ECONFLICT || attempt == 2 {
			break
		}
	}
	if err != nil && !errors.Is(err, ErrNothingToLearn) && !errors.Is(err, ErrSourceGone) {
		svc.giveBack(ctx, s.ID, claimed, to+1)
	}
	return err
}

// giveBack moves the watermark of session id back from claimedTo to
// claimedFrom, if it is still where this claim left it.
func (svc *Service) giveBack(ctx context.Context, id string, claimedFrom, claimedTo int) {
	_, err := svc.Sessions.UpdateSession(context.WithoutCancel(ctx), id, func(cur *sessions.Session) error {
		if cur.Bookkeeping.LearnFrom != claimedTo {
			return ErrBatchTaken
		}
		cur.Bookkeeping.LearnFrom = claimedFrom
		return nil
	})
	if err != nil && !errors.Is(err, ErrBatchTaken) && svc.Log != nil {
		svc.Log.WarnContext(ctx, "long-term memory: could not give a failed batch back", "sessionId", id, "error", err.Error())
	}
}

// extraction is what the model must answer.
type decision struct {
	kind     string
	existing string
}

func parseDecisions(raw string, n int, byID map[string]*Fact) (map[int]decision, error) {
	var out struct {
		Decisions []struct {
			Candidate int    `json:"candidate"`
			Decision  string `json:"decision"`
			Existing  string `json:"existing"`
		} `json:"decisions"`
	}
	if err := decodeModelJSON(raw, &out); err != nil {
		return nil, err
	}
	ds := map[int]decision{}
	for _, d := range out.Decisions {
		if d.Candidate < 1 || d.Candidate > n {
			return nil, fmt.Errorf("candidate %d out of range", d.Candidate)
		}
		switch d.Decision {
		case "new":
		case "same", "contradicts":
			if byID[d.Existing] == nil {
				return nil, fmt.Errorf("unknown existing fact %q", d.Existing)
			}
		default:
			return nil, fmt.Errorf("unknown decision %q", d.Decision)
		}
		ds[d.Candidate-1] = decision{kind: d.Decision, existing: d.Existing}
	}
	return ds, nil
}

// evict keeps the MaxFacts live facts of highest effective confidence,
// ordered so, and drops the rest.
func (svc *Service) evict(live []Fact, now time.Time) []Fact {
	live = byEffective(live, now, svc.Settings.DecayPerWeek)
	if len(live) > svc.Settings.MaxFacts {
		live = live[:svc.Settings.MaxFacts]
	}
	return live
}

// save recomputes the block and stores the change if nobody changed the
// user's memory meanwhile and its sources are still there.
func (svc *Service) save(ctx context.Context, u *User, c Change) error {
	if u.Partial {
		return errs.Errorf(errs.EINTERNAL, "long-term memory: a save without the live facts")
	}
	now := svc.now()
	svc.settle(u, now)
	u.UpdatedAt = now
	return svc.Store.SaveMemory(ctx, u.UserID, u.Version, u, c)
}

// settle renders u's block at now, moving its division (StableAt) to now
// on a new day or when the recent part is full, so that the stable part
// changes at most then.
func (svc *Service) settle(u *User, now time.Time) {
	if !sameDay(u.StableAt, now) {
		u.StableAt = now
	}
	facts := byEffective(u.Facts, now, svc.Settings.DecayPerWeek)
	var full bool
	u.Block, u.BlockTokens, u.BlockCut, full = buildBlock(u, facts, svc.Settings, svc.Tokens)
	if full {
		u.StableAt = now
		u.Block, u.BlockTokens, u.BlockCut, _ = buildBlock(u, facts, svc.Settings, svc.Tokens)
	}
}

// sameDay reports whether a and b fall on the same UTC day.
func sameDay(a, b time.Time) bool {
	return a.UTC().Truncate(24 * time.Hour).Equal(b.UTC().Truncate(24 * time.Hour))
}

func (svc *Service) now() time.Time { return clock.Stored(svc.Now) }

// malformed logs output the model got wrong and ignores it: memory stays
// as it was, and the batch counts as done. The log says what was wrong in
// fixed words and how long the output was, never what it said: model
// output quotes the user.
func (svc *Service) malformed(ctx context.Context, s *sessions.Session, what, problem string, size int) error {
	if svc.Log != nil {
		svc.Log.WarnContext(ctx, "long-term memory: malformed "+what+" output ignored", "sessionId", s.ID, "problem", problem, "outputBytes", size)
	}
	return nil
}

// decodeModelJSON reads a JSON object from model output, tolerating a code
// fence around it, and rejects unknown fields.
func decodeModelJSON(raw string, v any) error {
	s := strings.TrimSpace(raw)
	s = strings.TrimPrefix(s, "```json")
	s = strings.TrimPrefix(s, "```")
	s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	return strictjson.Decode([]byte(s), v)
}
