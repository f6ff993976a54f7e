package firestoredb

import (
	"context"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// RunAppend reads the session, its context, the key's first message (or,
// after a commit whose answer was lost, an unkeyed batch's first id), the
// user's quota and the day's spend in one BatchGetDocuments, and commits
// the messages, the session, what changed of its context, the tail document and
// the spend (each on condition of its update time) in one Commit; see
// chat.TurnStore.
func (db *DB) RunAppend(ctx context.Context, q chat.AppendQuery, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (string, error) {
	after, _, err := db.AppendKnown(ctx, q, nil, nil, plan)
	if err != nil {
		return "", err
	}
	return after.ContextVersion, nil
}

// AppendKnown runs an append as RunAppend does, but given known (the
// session and its context as a cache kept them, at the version q.IfMatch
// names) it plans from it instead of reading them, and given usage too
// (the user's quota and spend on q.Day, as an earlier AppendKnown
// returned them) it reads nothing: the commit's conditions tell whether
// all that is still current, and its Create of the key's messages whether
// the key is new; a refused commit reads and plans again. It returns the
// session and its context as the commit left them (with a nil write, as
// read), and the user's quota and spend; their Version, and usage, are
// nil when the store cannot tell them.
func (db *DB) AppendKnown(ctx context.Context, q chat.AppendQuery, known *chat.TurnState, usage chat.Version, plan func(*chat.AppendState) (*chat.AppendWrite, error)) (*chat.TurnState, chat.Version, error) {
	a := &appendRun{db: db, q: q, known: known, usage: usage, plan: plan, msgs: db.messagesOf(q.SessionID), first: true, plannedSeq: -1}
	res, err := db.optimistic(ctx, a.attempt)
	if err != nil {
		return nil, nil, err
	}
	return a.outcome(res)
}

// appendRun is one append: what it was asked, what it keeps across the
// attempts of its commit, and what the last attempt read and wrote.
type appendRun struct {
	db    *DB
	q     chat.AppendQuery
	known *chat.TurnState
	usage chat.Version
	plan  func(*chat.AppendState) (*chat.AppendWrite, error)
	msgs  *firestore.CollectionRef

	names      []string // an unkeyed batch's ids, kept across attempts
	first      bool     // no attempt yet: known and usage may stand for a read
	written    bool     // an attempt got as far as a commit
	plannedSeq int      // of the first message the last commit tried wrote; -1: none

	read *stored   // the session and its context as the last attempt read them
	ur   usageRead // the user's quota and spend, as read or known
	w    *chat.AppendWrite
	b    *writes
	wd   *tailDoc
}

// attempt plans one commit, from what start read or knew; nil writes:
// there is nothing to commit.
func (a *appendRun) attempt(_ context.Context, get getAll) (*writes, error) {
	as, err := a.start(get)
	if err != nil || as == nil {
		return nil, err
	}
	if a.w, err = a.plan(as); err != nil || a.w == nil {
		return nil, err
	}
	if a.q.Key == "" {
		a.names = nameBatch(a.names, a.w.Messages, a.msgs)
	}
	if len(a.w.Messages) > 0 {
		a.plannedSeq = a.w.Messages[0].Seq
	}
	if a.b, a.wd, err = a.db.writeAppend(a.q, a.read, a.ur, a.w); err != nil {
		return nil, err
	}
	a.written = true
	return a.b, nil
}

// start is the state an attempt plans from: the session, its context and
// the user's quota and spend as known or read in one batched get, with
// the batch's first message when it may be stored already (its key's, or,
// after a commit whose answer was lost, an unkeyed batch's first id). It
// is nil when that commit landed after all.
func (a *appendRun) start(get getAll) (*chat.AppendState, error) {
	extra := []*firestore.DocumentRef{a.db.usageRef(a.q.UserID), a.db.dayRef(a.q.UserID, a.q.Day)}
	switch {
	case a.q.Key != "":
		extra = append(extra, a.msgs.Doc(history.KeyedMessageID(a.q.Key, 0)))
	case a.written:
		extra = append(extra, a.msgs.Doc(a.names[0]))
	}
	st, kept, snaps, err := a.db.appendStart(get, a.q, a.first, a.known, a.usage, extra)
	if kept != nil {
		a.ur = *kept
	}
	a.first, a.read, a.w = false, st, nil
	if err != nil {
		return nil, err
	}
	if !st.exists {
		return nil, sessions.NotFound(a.q.SessionID)
	}
	if snaps != nil {
		if a.q.Key == "" && a.written && snaps[2].Exists() {
			return nil, nil // the last commit landed
		}
		if a.ur, err = readUsage(snaps[0], snaps[1], a.q.Day); err != nil {
			return nil, err
		}
	}
	as := &chat.AppendState{Session: st.s, Tail: st.t, Usage: a.ur.usage(a.q.UserID), Version: st.version()}
	if a.q.Key != "" && snaps != nil && snaps[2].Exists() {
		if as.Stored, err = readBatch(get, a.msgs, a.q.Key, snaps[2]); err != nil {
			return nil, err
		}
		// A commit refused may still have been this one's: the
		// client tries a commit again when its answer is lost.
		as.MayHaveLanded = as.Stored[0].Seq == a.plannedSeq
	}
	return as, nil
}

// outcome is what the append returns once its commit ran (res: the
// commit's results): the session and its context as it left them, and the
// user's quota and spend when the commit's update times tell them.
func (a *appendRun) outcome(res []*firestore.WriteResult) (*chat.TurnState, chat.Version, error) {
	switch {
	case a.w == nil && a.read != nil: // as read just now: nothing was planned
		return stateOf(a.read), a.ur, nil
	case a.w == nil || res == nil: // written in a transaction, which reports no update times
		return &chat.TurnState{}, nil, nil
	}
	q := a.q
	after := a.read.after(a.b, res, a.db.sessionRef(q.SessionID), a.db.tailRef(q.SessionID), a.w.Session, a.w.Tail, a.wd, nil)
	if now, ok := a.ur.after(a.b, res, a.db.usageRef(q.UserID), a.db.dayRef(q.UserID, q.Day), a.w.Quota, a.w.Tokens); ok {
		return stateOf(after), now, nil
	}
	return stateOf(after), nil, nil
}

// nameBatch names an unkeyed batch's messages with names, which it extends
// with new ids as needed and returns: the same ids on every attempt, so
// that a commit whose answer was lost is found by them.
func nameBatch(names []string, batch []history.Message, msgs *firestore.CollectionRef) []string {
	for len(names) < len(batch) {
		names = append(names, msgs.NewDoc().ID)
	}
	for i := range batch {
		batch[i].ID = names[i]
	}
	return names
}

// writeAppend plans the commit of an append's write w over the session
// and context st and the user's quota and spend ur, each on condition
// that it is as read, and returns it with the tail document it writes.
func (db *DB) writeAppend(q chat.AppendQuery, st *stored, ur usageRead, w *chat.AppendWrite) (*writes, *tailDoc, error) {
	b := db.newWrites()
	sref := db.sessionRef(q.SessionID)
	db.createMessages(b, q.SessionID, q.Key, w.Messages)
	w.Tail.SetIDs(w.Messages)
	db.writeSession(b, sref, st, w.Session)
	wd, err := db.writeContext(b, st, w.Session, w.Tail)
	if err != nil {
		return nil, nil, err
	}
	if st.next != nil {
		b.addUpdate(sref, nextUpdate(nil)) // the tail document has it now, or it is stale
	}
	w.Quota.UserID = q.UserID
	writeQuota(b, db.usageRef(q.UserID), ur.quotaTime, w.Quota, "")
	if w.Tokens > 0 {
		db.spendOn(b, q.UserID, ur, w.Tokens)
	}
	return b, wd, nil
}

// appendStart is what an attempt of an append starts from. The first,
// given known at the version the app read (q.IfMatch), starts from it:
// the commit's conditions tell whether it is still current. Given usage
// too, it reads nothing and returns it as kept; else it reads extra (the
// user's quota and spend, and the key's message). Any other attempt
// reads the session and its context with extra.
func (db *DB) appendStart(get getAll, q chat.AppendQuery, first bool, known *chat.TurnState, usage chat.Version, extra []*firestore.DocumentRef) (_ *stored, kept *usageRead, _ []*firestore.DocumentSnapshot, _ error) {
	k := knownAt(known, q.IfMatch)
	if !first || k == nil {
		st, snaps, err := db.readStored(get, q.SessionID, extra...)
		return st, nil, snaps, err
	}
	if ku, ok := usage.(usageRead); ok && ku.day == q.Day {
		return k, &ku, nil, nil // nothing to read
	}
	snaps, err := get(extra)
	return k, nil, snaps, err
}

// knownAt is the session and context known holds, if it is at version v.
func knownAt(known *chat.TurnState, v string) *stored {
	kv, ok := stateVersion(known)
	if !ok || v == "" || known.ContextVersion != v || kv.st.version() != v {
		return nil
	}
	return kv.st.clone()
}
