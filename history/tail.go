package history

import (
	"slices"
	"time"

	"github.com/chatmemory/backend/kernel/clock"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/sessions"
)

// Tail is what a session stores to build its context from (the "context"
// documents of a session in Firestore), kept up to date in the same
// transaction as every append: the latest messages verbatim (whole bundles,
// at most the session's budget of tokens and MaxTailBytes of text) and the
// summary in use. A turn's context is built from it alone, so building a
// context costs the same at turn 5 and at turn 5,000. The raw history in
// the messages collection is never touched by it.
type Tail struct {
	Messages   []Message   // oldest first
	Compaction *Compaction // the summary of everything up to its EndSeq; nil if none
	// CompactingUntil is the lease of a compaction in progress.
	CompactingUntil time.Time
}

// MaxTailBytes caps what a tail holds, by StoredBytes. A store keeps the
// tail in bounded pages and writes only the pages an append changes; this
// cap bounds how many pages a tail spans.
const MaxTailBytes = 400 << 10

// AppendOne plans appending d to session s and a copy of tail t, unstored,
// for callers that store the result in a commit of their own (a turn does).
// The message is named id, or by KeyedMessageID when id is empty and key is set.
// It changes s and returns the message and the new tail.
func (svc *Service) AppendOne(s *sessions.Session, t *Tail, key, id string, d Draft) (Message, *Tail, error) {
	msgs, t, err := svc.AppendMany(s, t, key, []string{id}, d)
	if err != nil {
		return Message{}, nil, err
	}
	return msgs[0], t, nil
}

// AppendMany is AppendOne for a batch: drafts appended in order, the i-th
// named ids[i] when that is set, else as AppendOne names it.
func (svc *Service) AppendMany(s *sessions.Session, t *Tail, key string, ids []string, drafts ...Draft) ([]Message, *Tail, error) {
	plan, err := svc.Prepare(s, key, drafts...)
	if err != nil {
		return nil, nil, err
	}
	t = t.Clone()
	msgs, err := plan(s, t, nil)
	if err != nil {
		return nil, nil, err
	}
	for i, id := range ids {
		if id != "" && i < len(msgs) {
			msgs[i].ID = id
		}
	}
	t.SetIDs(msgs)
	return msgs, t, nil
}

// Prepare validates drafts and returns the plan that appends them to
// session s (as Append would): for callers that store the append together
// with other writes. Messages of a keyed batch are named by KeyedMessageID.
func (svc *Service) Prepare(s *sessions.Session, key string, drafts ...Draft) (Plan, error) {
	return svc.PlanFor(s.UserID, s.ID, key, drafts...)
}

// PlanFor is Prepare for a session not read yet: the plan checks that
// userID owns it, and counts the messages' tokens for its model the first
// time it runs (again only if a later run finds another model).
func (svc *Service) PlanFor(userID, sessionID, key string, drafts ...Draft) (Plan, error) {
	if err := validateBatch(key, drafts); err != nil {
		return nil, err
	}
	now := clock.Stored(svc.Now)
	msgs := newMessages(userID, sessionID, key, now, drafts)
	counted, total := "", 0 // the model msgs' tokens were counted for, and their sum
	return func(cur *sessions.Session, t *Tail, stored []Message) ([]Message, error) {
		if err := cur.CheckOwner(userID); err != nil {
			return nil, err
		}
		if stored != nil {
			if !sameBatch(stored, drafts) {
				return nil, errs.Errorf(errs.ECONFLICT, "clientMessageId %q was already used for other messages", key)
			}
			return nil, nil
		}
		if counted != cur.Model || total == 0 {
			counted, total = cur.Model, svc.count(cur.Model, msgs)
		}
		return svc.appendTo(cur, t, msgs, total, now)
	}, nil
}

// newMessages are drafts as messages of the session, written at now; a
// keyed batch's named by its key.
func newMessages(userID, sessionID, key string, now time.Time, drafts []Draft) []Message {
	msgs := make([]Message, len(drafts))
	for i, d := range drafts {
		msgs[i] = Message{
			SessionID:       sessionID,
			UserID:          userID,
			Role:            d.Role,
			Content:         d.Content,
			Name:            d.Name,
			ToolCalls:       d.ToolCalls,
			ToolCallID:      d.ToolCallID,
			CreatedAt:       now,
			ClientMessageID: key,
			Metadata:        d.Metadata,
			Attachments:     partsOf(&d),
		}
		if key != "" {
			msgs[i].ID = KeyedMessageID(key, i)
		}
	}
	return msgs
}

// count sets each message's tokens for model, and returns their sum.
func (svc *Service) count(model string, msgs []Message) int {
	total := 0
	for i := range msgs {
		msgs[i].Tokens = svc.Tokens.Count(model, &msgs[i])
		total += msgs[i].Tokens
	}
	return total
}

// appendTo appends msgs (of total tokens) to cur at now, if it takes them:
// each gets the session's next seq and its parent on the active branch,
// the session its counters, and t the messages, within cur's budget.
func (svc *Service) appendTo(cur *sessions.Session, t *Tail, msgs []Message, total int, now time.Time) ([]Message, error) {
	if err := cur.CheckWritable(); err != nil {
		return nil, err
	}
	if err := cur.CheckNotAnswering(now); err != nil {
		return nil, err
	}
	if svc.MaxMessages > 0 && cur.MessageCount+len(msgs) > svc.MaxMessages {
		return nil, errs.Errorf(errs.ETOOLARGE, "the session has reached its limit of %d messages; start a new session", svc.MaxMessages)
	}
	open, err := toolSequence(cur.Bookkeeping.PendingToolCalls, msgs)
	if err != nil {
		return nil, err
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.Seq = cur.NextSeq
		if m.ParentSeq, err = cur.Continue(m.Seq); err != nil {
			return nil, err
		}
		cur.NextSeq++
		out[i] = m
	}
	cur.NoteAppend(now)
	cur.MessageCount += len(out)
	cur.TokenCount += total
	cur.Bookkeeping.PendingToolCalls = open
	cur.Touch(now, svc.Policy)
	t.add(out, svc.BudgetFor(cur))
	return out, nil
}

func sameBatch(stored []Message, drafts []Draft) bool {
	if len(stored) != len(drafts) {
		return false
	}
	for i := range stored {
		if !stored[i].SameContent(&drafts[i]) {
			return false
		}
	}
	return true
}

// Clone returns a copy of t that can be changed without changing t.
func (t *Tail) Clone() *Tail {
	c := *t
	c.Messages = slices.Clone(t.Messages)
	return &c
}

// SetIDs gives the tail's copies of written the ids the store gave them
// (an append plans messages before the store names them).
func (t *Tail) SetIDs(written []Message) {
	ids := make(map[int]string, len(written))
	for _, m := range written {
		ids[m.Seq] = m.ID
	}
	for i := range t.Messages {
		if id, ok := ids[t.Messages[i].Seq]; ok {
			t.Messages[i].ID = id
		}
	}
}

// add appends msgs and drops the oldest messages while the tail holds more
// than keep tokens or MaxTailBytes. Tool results are dropped with the call
// they answer, never left behind on their own.
func (t *Tail) add(msgs []Message, keep int) {
	for _, m := range msgs {
		t.Messages = append(t.Messages, tailCopy(m))
	}
	tokens, bytes := 0, 0
	for i := range t.Messages {
		tokens += t.Messages[i].Tokens
		bytes += StoredBytes(&t.Messages[i])
	}
	drop := 0
	for drop < len(t.Messages)-1 && (tokens > keep || bytes > MaxTailBytes) {
		tokens -= t.Messages[drop].Tokens
		bytes -= StoredBytes(&t.Messages[drop])
		drop++
		for drop < len(t.Messages)-1 && t.Messages[drop].Role == RoleTool {
			tokens -= t.Messages[drop].Tokens
			bytes -= StoredBytes(&t.Messages[drop])
			drop++
		}
	}
	t.Messages = append([]Message(nil), t.Messages[drop:]...)
}

// tailCopy keeps what a context needs of a message.
func tailCopy(m Message) Message {
	return Message{ID: m.ID, SessionID: m.SessionID, Seq: m.Seq, ParentSeq: m.ParentSeq, Role: m.Role, Content: m.Content, Name: m.Name,
		ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, CreatedAt: m.CreatedAt, Tokens: m.Tokens, Attachments: m.Attachments}
}

// StoredBytes bounds from above what a message takes in a tail as a store
// keeps it: its text plus a generous allowance for field names, numbers
// and times (Firestore's storage-size rules give 90 to 250 bytes for the
// fields of a short message; its size function is tested against this).
func StoredBytes(m *Message) int {
	n := 256 + len(m.Role) + len(m.Content) + len(m.Name) + len(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += 64 + len(c.ID) + len(c.Type) + len(c.Function.Name) + len(c.Function.Arguments)
	}
	for _, p := range m.Attachments {
		n += 64 + len(p.ID) + len(p.Type) + len(p.Name) + len(p.Alt)
	}
	return n
}
