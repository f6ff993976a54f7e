package firestoredb

import (
	"context"
	"fmt"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// A cache in front of the store (package cache) keeps the states the
// store returns, and starts from one instead of reading it: a turn's
// claim (ClaimKnown), a read of a context (ReadKnown) and an append
// (AppendKnown). Nothing given is trusted: every commit planned from a
// known state is conditioned on the update times it names, so a state
// that is no longer current is refused whole, and the store then reads
// and plans as it would have without it.

// ClaimKnown plans a turn's claim from known (the session, its context
// and the user's slots named by q.Slots, as a cache kept them) and
// commits it at once, reading beside that commit only what the turn must
// see fresh: the day's spend, the memory block and the reply under the
// turn's key. The state it returns holds those as read. It returns nil
// when nothing of it stands (the caller then runs the turn from a read),
// and tried when it sent a commit.
func (db *DB) ClaimKnown(ctx context.Context, q chat.TurnQuery, known *chat.TurnState, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (out *chat.TurnState, tried bool) {
	v, ok := stateVersion(known)
	if !ok || !v.st.exists || q.AskedID != "" || q.Deleted || q.Day == "" || len(known.SlotVersions) != len(q.Slots) {
		return nil, false
	}
	st := v.st.clone() // no plan given it changes what the cache kept
	ts := *known
	ts.Session, ts.Tail, ts.Version = st.s, st.t, &turnVersion{st: st}
	w, err := plan(&ts)
	if err != nil || w == nil {
		return nil, false // the read decides: what was kept may be stale
	}
	b, written, err := db.writeTurn(q, &ts, w)
	if err != nil {
		return nil, false
	}
	ctx, cancel := db.op(ctx)
	defer cancel()
	var snaps []*firestore.DocumentSnapshot
	var gerr error
	read := make(chan struct{})
	go func() {
		defer close(read)
		snaps, gerr = db.client.GetAll(ctx, db.besideRefs(q))
	}()
	res, err := b.commit(ctx, db.client)
	<-read
	if err != nil || gerr != nil {
		return nil, true
	}
	out = written(res)
	if keyedReply(q) && snaps[len(snaps)-1].Exists() {
		// The key is a regeneration's: this claim must not stand. Once it
		// is undone, the read finds the key taken.
		_ = db.undoClaim(ctx, q, &ts, out, w) // if it fails, the read finds what stands
		return nil, true
	}
	if err := db.readBeside(q, snaps, out); err != nil {
		return nil, true
	}
	return out, true
}

// clone is st with its session and tail copied, so that no plan given
// one changes the other.
func (st *stored) clone() *stored {
	cp := *st
	cp.s, cp.t = st.s.Clone(), st.t.Clone()
	return &cp
}

// besideRefs are what a claim from what was kept reads beside its commit:
// the day's spend, the memory block, and the reply under the key.
func (db *DB) besideRefs(q chat.TurnQuery) []*firestore.DocumentRef {
	refs := []*firestore.DocumentRef{db.dayRef(q.UserID, q.Day)}
	if q.Memory {
		refs = append(refs, db.memoryRef(q.UserID))
	}
	if keyedReply(q) {
		refs = append(refs, db.messagesOf(q.SessionID).Doc(q.ReplyID))
	}
	return refs
}

// keyedReply reports whether the reply under a turn's key is read beside
// a claim from what was kept. A key is one operation's: a turn's claim
// creates the key's message, which a regeneration under the key does not
// store; its reply is where this turn's would go.
func keyedReply(q chat.TurnQuery) bool { return q.Key != "" && q.ReplyID != "" }

// readBeside puts the day's spend and the memory block read beside a
// claim into out.
func (db *DB) readBeside(q chat.TurnQuery, snaps []*firestore.DocumentSnapshot, out *chat.TurnState) error {
	var day dayDoc
	if err := dataTo(snaps[0], &day); err != nil {
		return err
	}
	out.DayTokens = day.Tokens // a claim adds no tokens
	if q.Memory {
		u, err := decodeMemoryUser(snaps[1], q.UserID)
		if err != nil {
			return err
		}
		out.Memory = chat.MemoryOf(u)
	}
	return nil
}

// undoClaim commits what restores the state a claim was planned on (ts)
// from the state its commit left (out): the session as it was, its
// tailNext and tail document as they were, without the claim's message and
// draft (and any tokens it charged), on condition that nothing changed
// since the claim. The slot it took stays taken: the safe side of a
// limit.
func (db *DB) undoClaim(ctx context.Context, q chat.TurnQuery, ts, out *chat.TurnState, w *chat.TurnWrite) error {
	before, _ := stateVersion(ts)
	after, _ := stateVersion(out)
	b := db.newWrites()
	sref := db.sessionRef(q.SessionID)
	db.writeSession(b, sref, after.st, before.st.s)
	if before.st.next != nil || after.st.next != nil {
		b.addUpdate(sref, nextUpdate(before.st.next))
	}
	if !after.st.tailTime.Equal(before.st.tailTime) { // the claim wrote the tail document
		if before.st.tailDoc == nil {
			b.Delete(db.tailRef(q.SessionID), firestore.LastUpdateTime(after.st.tailTime))
			if err := fenceContext(b, sref, after.st); err != nil {
				return err
			}
		} else if _, err := db.writeContext(b, after.st, before.st.s, before.st.docTail); err != nil {
			return err
		}
	}
	for _, m := range w.Messages {
		b.Delete(db.messagesOf(q.SessionID).Doc(m.ID))
	}
	if w.Draft != nil && w.Draft.Create {
		b.Delete(db.draftRef(q.SessionID))
	}
	if w.Tokens > 0 { // a claim that charged (the chat's do not) is charged back
		back := map[string]chat.ModelTokens{}
		for m, n := range w.ByModel {
			back[m] = chat.ModelTokens{Input: -n.Input, Cached: -n.Cached, Output: -n.Output}
		}
		db.addTokens(b, q.UserID, q.Day, -w.Tokens, back)
	}
	_, err := b.commit(ctx, db.client)
	return err
}

// ReadKnown reads what q names as ReadTurn does, but of the session and
// its context, given known (as a cache kept them), it reads the session
// document alone: when its update time or its contextRev is known's,
// known's tail document is current (see fenceContext) and is used; when neither
// is, the tail document is read in a second round trip.
func (db *DB) ReadKnown(ctx context.Context, q chat.TurnQuery, known *chat.TurnState) (*chat.TurnState, error) {
	v, ok := stateVersion(known)
	if !ok || !v.st.exists {
		return db.ReadTurn(ctx, q)
	}
	k := v.st
	peek := func(get getAll, sessionID string, extra ...*firestore.DocumentRef) (*stored, []*firestore.DocumentSnapshot, error) {
		snaps, err := get(append([]*firestore.DocumentRef{db.sessionRef(sessionID)}, extra...))
		if err != nil {
			return nil, nil, err
		}
		st, err := decodeStoredSession(snaps[0], sessionID)
		if err != nil {
			return nil, nil, err
		}
		if st.exists && !sameContext(st, k) {
			return db.readStored(get, sessionID, extra...)
		}
		if st.exists && k.tailDoc != nil {
			st.setTail(k.tailDoc, k.tailTime, k.docTail.Clone())
		}
		return st, snaps[1:], nil
	}
	var out *chat.TurnState
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		var err error
		out, err = db.readTurnState(get, q, peek)
		return nil, err
	})
	return out, err
}

// sameContext reports whether st, a session document just read, holds the
// context kept in k: it is as k read or wrote it, or only the session
// changed since (the same contextRev, which every write of the context
// sets anew).
func sameContext(st, k *stored) bool {
	return st.sessionTime.Equal(k.sessionTime) || (k.contextRev != "" && st.contextRev == k.contextRev)
}

// CreateKnown creates a session as CreateSession does, and returns it as
// known, with no context yet: a cache that keeps it lets the session's
// first turn claim without reading it.
func (db *DB) CreateKnown(ctx context.Context, s *sessions.Session) (*chat.TurnState, error) {
	created, err := db.createSession(ctx, s)
	if err != nil {
		return nil, err
	}
	t := &history.Tail{}
	st := &stored{sessionID: s.ID, exists: true, sessionTime: created, s: s.Clone(), t: t, docTail: t}
	return stateOf(st), nil
}

// stateOf is st as a known state: the session, its context and their
// version, with nothing else of a turn's. Its Version is nil (a cache
// keeps nothing of it) for a session still in an earlier layout.
func stateOf(st *stored) *chat.TurnState {
	out := &chat.TurnState{ContextVersion: st.version()}
	if st.exists {
		out.Session, out.Tail = st.s, st.t
	}
	if st.exists && st.legacy == nil {
		out.Version = &turnVersion{st: st}
	}
	return out
}

// version names a session and its context as stored: the update times of
// the session and tail documents (every write of either changes its
// own). "" if there is no session.
func (st *stored) version() string {
	if !st.exists {
		return ""
	}
	var w int64
	if !st.tailTime.IsZero() {
		w = st.tailTime.UnixNano()
	}
	return fmt.Sprintf("%x.%x", st.sessionTime.UnixNano(), w)
}
