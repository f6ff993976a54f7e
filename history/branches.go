package history

import (
	"context"
	"slices"

	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// branchReadPage is how many messages BranchTail reads per query.
const branchReadPage = 100

// SwitchBranch makes active the branch through message seq of the caller's
// session, down to its latest version of every later message (as chat
// apps show a branch), and rebuilds the session's context for it. The next
// turn continues that branch. Nothing is written or deleted but the
// session's active leaf and its context.
func (svc *Service) SwitchBranch(ctx context.Context, userID, sessionID string, seq int) (*sessions.Session, error) {
	s, _, err := svc.ReadTail(ctx, userID, sessionID)
	if err != nil {
		return nil, err
	}
	if seq < 0 || seq >= s.NextSeq {
		return nil, errs.Errorf(errs.EINVALID, "seq must name a message of the session (0 to %d)", s.NextSeq-1)
	}
	if seq < s.Bookkeeping.HistoryFrom {
		return nil, errs.Errorf(errs.ENOTFOUND, "message %d was deleted by message retention: the session's history starts at %d", seq, s.Bookkeeping.HistoryFrom)
	}
	if err := s.CheckWritable(); err != nil {
		return nil, err
	}
	leaf := s.LatestLeaf(seq)
	if leaf == s.Leaf() {
		return s, nil
	}
	base, err := svc.BranchTail(ctx, s, leaf)
	if err != nil {
		return nil, err
	}
	var out *sessions.Session
	err = svc.Store.UpdateTail(ctx, sessionID, func(cur *sessions.Session, t *Tail) error {
		if err := cur.CheckOwner(userID); err != nil {
			return err
		}
		if err := cur.CheckWritable(); err != nil {
			return err
		}
		// The tree only grows, so leaf is still where it was; a message
		// written under it meanwhile would make it no longer the leaf.
		if cur.LatestLeaf(leaf) != leaf {
			return errs.Errorf(errs.ECONFLICT, "the branch changed meanwhile; try again")
		}
		lease := t.CompactingUntil
		*t = *svc.ForkTail(cur, base, leaf)
		t.CompactingUntil = lease
		cur.UpdatedAt = clock.Stored(svc.Now)
		out = cur
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// BranchTail builds, from stored messages, the tail a session has while
// the branch ending at message leaf is active: the branch's latest summary
// (a summary covers the branch it was made on, so one made on another
// branch past the fork is never used) and the branch's messages after it,
// the latest within the session's budget and MaxTailBytes, as appends keep
// them. It reads newest first and stops once the tail is full, so it costs
// what a tail holds, not what the session holds. Messages and their
// parents never change, so what it returns stays true of that branch.
func (svc *Service) BranchTail(ctx context.Context, s *sessions.Session, leaf int) (*Tail, error) {
	keep := svc.BudgetFor(s)
	path := s.PathTo(leaf)
	t := &Tail{}
	if len(path) == 0 {
		return t, nil
	}
	var cs []Compaction
	if s.Bookkeeping.SummaryUpdatedAt != nil { // else no summary was ever saved
		var err error
		if cs, err = svc.Store.ListCompactions(ctx, s.ID); err != nil {
			return nil, err
		}
	}
	after := -1 // the tail holds messages after this seq
	for i := len(cs) - 1; i >= 0; i-- {
		if path.Contains(cs[i].EndSeq) {
			c := cs[i]
			t.Compaction, after = &c, c.EndSeq
			break
		}
	}
	var newest []Message
	tokens, bytes := 0, 0
	full := false
	for i := len(path) - 1; i >= 0 && !full; i-- {
		span := path[i]
		if span.To <= after {
			break
		}
		span.From = max(span.From, after+1)
		cursor := span.To + 1
		for !full {
			msgs, err := svc.Store.ListMessages(ctx, ListQuery{SessionID: s.ID, Desc: true, Limit: branchReadPage, AfterSeq: &cursor, Within: &span})
			if err != nil {
				return nil, err
			}
			for _, m := range msgs {
				newest = append(newest, tailCopy(m))
				tokens += m.Tokens
				bytes += StoredBytes(&m)
				if tokens > keep || bytes > MaxTailBytes {
					full = true // add drops what is over, keeping exchanges whole
					break
				}
			}
			if len(msgs) < branchReadPage {
				break
			}
			cursor = msgs[len(msgs)-1].Seq
		}
	}
	slices.Reverse(newest)
	t.add(newest, keep)
	return t, nil
}

// ForkTail makes the branch ending at message leaf the active one of s
// (its leaf, pending tool calls and summary) and returns its tail: base, a
// BranchTail read before the plan that calls this, trimmed to s's current
// budget. Turns that fork and switches use it.
func (svc *Service) ForkTail(s *sessions.Session, base *Tail, leaf int) *Tail {
	t := &Tail{Compaction: base.Compaction}
	t.add(base.Messages, svc.BudgetFor(s))
	s.SetLeaf(leaf)
	s.Bookkeeping.PendingToolCalls = pendingCalls(t.Messages)
	s.Bookkeeping.Summary = summaryOf(t)
	return t
}

// pendingCalls are the tool calls the last message of msgs left open: the
// session's PendingToolCalls once msgs ends its active branch.
func pendingCalls(msgs []Message) []string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleTool {
			continue
		}
		open, err := toolSequence(nil, msgs[i:])
		if err != nil {
			return nil
		}
		return open
	}
	return nil
}

// summaryOf is the session's summary while t is its context: that of the
// active branch.
func summaryOf(t *Tail) string {
	if t.Compaction == nil {
		return ""
	}
	return t.Compaction.Summary
}

// siblingsOf fills in the Siblings of msgs from s's tree.
func siblingsOf(s *sessions.Session, msgs []Message) {
	if s.Branches == nil {
		return
	}
	for i := range msgs {
		if sib := s.Siblings(msgs[i].Seq); len(sib) > 1 {
			msgs[i].Siblings = sib
		}
	}
}
