package firestoredb

import (
	"context"
	"slices"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/chat"
)

// A turn on the instance that ran the session's last turn (or append, or
// read its context) plans its claim from what the instance kept of the
// session and of the user's rate-limit slots, and commits it at once,
// while it reads beside that commit only what it must see fresh: the
// day's spend, the memory block and the reply under the turn's key.
// Nothing kept is trusted: the claim is conditioned on the session's
// update time (every change of its lease, counters, branch or status
// changes it) and on each slot's, so a claim planned from what is no
// longer current is refused whole, and the turn reads and plans again as
// any other. The spend it admitted the turn under is the least the day's
// can be (what this instance read and spent since); the domain checks the
// spend read beside the claim before the model is called.

// turnUser is what an instance knows of a user's turn documents.
type turnUser struct {
	slots    map[int]slotKnown // slot index → as last read or written
	day      string
	dayFloor int              // spent on day: at least this much
	memory   chat.MemoryBlock // as last read (its Source is nil until one was)
	claiming bool             // a claim from what is kept is under way
}

// slotKnown is a slot document as read or written: the minute it was
// last taken in, and its update time (zero: there is none).
type slotKnown struct {
	minute int64
	time   time.Time
}

// noteTurnUser changes what is kept of userID's turn documents with fn.
func (k *kept) noteTurnUser(userID string, fn func(*turnUser)) {
	if k == nil || k.max <= 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	u, ok := k.turns[userID]
	if !ok {
		roomFor(k.turns, userID, keptUsers)
		u = &turnUser{slots: map[int]slotKnown{}}
		k.turns[userID] = u
	}
	fn(u)
}

// spent adds n to what is known spent on day.
func (u *turnUser) spent(day string, n int) {
	if u.day == day {
		u.dayFloor += n
	}
}

// claimFor returns a copy of what is kept of userID's turn documents,
// for one claim at a time: the user's turns at once on this instance
// would choose among the same few slots known free, and all but one
// would be refused, so while one claims from what is kept the others
// read (and choose among random slots, as on any instance). done ends it.
func (k *kept) claimFor(userID string) (u turnUser, done func(), ok bool) {
	if k == nil {
		return turnUser{}, nil, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	p, ok := k.turns[userID]
	if !ok || p.claiming {
		return turnUser{}, nil, false
	}
	p.claiming = true
	done = func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		p.claiming = false
	}
	cp := *p
	cp.slots = make(map[int]slotKnown, len(p.slots))
	for i, s := range p.slots {
		cp.slots[i] = s
	}
	return cp, done, true
}

// keptTurn is the state a turn's claim may plan from without reading:
// the session as this instance last read or wrote it, and every slot of
// the user's it knows (the query's slots are replaced by them); false if
// the instance lacks any of that, or the turn is not a plain one.
//
// The caller calls done once its claim is over.
func (db *DB) keptTurn(q chat.TurnQuery) (_ chat.TurnQuery, _ *chat.TurnState, done func(), _ bool) {
	if q.AskedID != "" || q.Deleted || q.Day == "" { // (a session kept exists: New changes nothing)
		return q, nil, nil, false
	}
	st := db.kept.latest(q.SessionID)
	if st == nil {
		return q, nil, nil, false
	}
	u, done, ok := db.kept.claimFor(q.UserID)
	if !ok {
		return q, nil, nil, false
	}
	if u.day != q.Day || (q.Memory && u.memory.Source == nil) || (len(q.Slots) > 0 && len(u.slots) == 0) {
		done()
		return q, nil, nil, false
	}
	if len(q.Slots) > 0 {
		q.Slots = make([]int, 0, len(u.slots))
		for i := range u.slots {
			q.Slots = append(q.Slots, i)
		}
		slices.Sort(q.Slots)
	}
	v := &turnVersion{st: st, slotTimes: make([]time.Time, len(q.Slots))}
	ts := &chat.TurnState{Session: st.s, Tail: st.t, ContextVersion: st.version(), Version: v,
		Slots: make([]int64, len(q.Slots)), DayTokens: u.dayFloor, Memory: u.memory}
	for i, idx := range q.Slots {
		ts.Slots[i], v.slotTimes[i] = u.slots[idx].minute, u.slots[idx].time
	}
	return q, ts, done, true
}

// claimFromKept plans a turn's claim from what this instance kept (see
// keptTurn) and commits it, reading beside the commit what the turn must
// see fresh (see besideRefs). The state it returns holds those as read.
// It returns tried when it sent a commit, and nil when anything failed:
// the turn then reads as any other (and finds its own claim, if the
// commit landed but its answer was lost).
func (db *DB) claimFromKept(ctx context.Context, q chat.TurnQuery, plan func(*chat.TurnState) (*chat.TurnWrite, error)) (out *chat.TurnState, tried bool) {
	kq, ts, done, ok := db.keptTurn(q)
	if !ok {
		return nil, false
	}
	defer done()
	w, err := plan(ts)
	if err != nil || w == nil {
		return nil, false // the read decides: what was kept may be stale
	}
	b, written, err := db.writeTurn(kq, ts, w)
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
		if err := db.undoClaim(ctx, kq, ts, out, w); err != nil {
			db.kept.drop(q.SessionID)
		}
		return nil, true
	}
	if err := db.readBeside(q, snaps, out); err != nil {
		return nil, true
	}
	return out, true
}

// keyedReply reports whether the reply under a turn's key is read beside
// a claim from what was kept. A key is one operation's: a turn's claim
// creates the key's message, which a regeneration under the key does not
// store; its reply is where this turn's would go.
func keyedReply(q chat.TurnQuery) bool { return q.Key != "" && q.ReplyID != "" }

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

// readBeside puts the day's spend and the memory block read beside a
// claim into out, and keeps them.
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
	db.kept.noteTurnUser(q.UserID, func(u *turnUser) {
		u.day, u.dayFloor = q.Day, out.DayTokens
		if q.Memory {
			u.memory = out.Memory
		}
	})
	return nil
}

// undoClaim commits what restores the state a claim was planned on (ts)
// from the state its commit left (out): the session as it was, its
// tailNext and window as they were, without the claim's message and
// draft (and any tokens it charged), on condition that nothing changed
// since the claim. The slot it
// took stays taken: the safe side of a limit.
func (db *DB) undoClaim(ctx context.Context, q chat.TurnQuery, ts, out *chat.TurnState, w *chat.TurnWrite) error {
	before, _ := stateVersion(ts)
	after, _ := stateVersion(out)
	b := db.newWrites()
	sref := db.sessionRef(q.SessionID)
	db.writeSession(b, sref, after.st, before.st.s)
	if before.st.next != nil || after.st.next != nil {
		b.addUpdate(sref, nextUpdate(before.st.next))
	}
	if !after.st.windowTime.Equal(before.st.windowTime) { // the claim wrote the window
		if before.st.window == nil {
			b.Delete(db.windowRef(q.SessionID), firestore.LastUpdateTime(after.st.windowTime))
			if err := fenceContext(b, sref, after.st); err != nil {
				return err
			}
		} else if _, err := db.writeContext(b, after.st, before.st.s, before.st.windowTail); err != nil {
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
		back := map[string]int{}
		for m, n := range w.ByModel {
			back[m] = -n
		}
		db.addTokens(b, q.UserID, q.Day, -w.Tokens, back)
	}
	_, err := b.commit(ctx, db.client)
	db.kept.drop(q.SessionID)
	return err
}
