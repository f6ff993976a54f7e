package firestoredb

import (
	"context"
	"maps"
	"slices"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/sessions"
)

// Migrate brings what earlier versions stored to today's layout, once,
// before this version serves: a session's context kept in an earlier
// layout (see legacy.go) becomes its tail document, each unit of search carries
// its session's title as it is now (and is moved from under its session to
// its user's collection, see moveUnits), and each user's list (see deleted.go)
// is made anew from their sessions, with the archived ones it did not hold
// before; the documents of users whose uid is not a safe id move from an
// earlier key to today's (see userkeys.go). It goes session by session in id order, then user by user; it
// is idempotent (a second run changes nothing) and resumable (after, the
// last session a cut-off run reported). Each change is a transaction that
// reads what it changes, so it may run beside the server.
func (db *DB) Migrate(ctx context.Context, after string, progress func(MigrateReport)) (MigrateReport, error) {
	rep := MigrateReport{After: after}
	users := map[string]bool{}
	for {
		page, err := db.SessionsAfter(ctx, rep.After, sessionsPage)
		if err != nil {
			return rep, err
		}
		for _, s := range page {
			if err := db.migrateSession(ctx, s, &rep); err != nil {
				return rep, err
			}
			users[s.UserID] = true
			rep.Sessions++
			rep.After = s.ID
			if progress != nil {
				progress(rep)
			}
		}
		if len(page) < sessionsPage {
			break
		}
	}
	moved, err := db.migrateUserKeys(ctx, users)
	rep.UserDocs += moved
	if err != nil {
		return rep, err
	}
	for _, user := range slices.Sorted(maps.Keys(users)) {
		changed, err := db.rebuildList(ctx, user)
		if err != nil {
			return rep, err
		}
		if changed {
			rep.Lists++
		}
	}
	return rep, nil
}

// MigrateReport is what a migration did.
type MigrateReport struct {
	Sessions int `json:"sessions"` // sessions looked at
	Contexts int `json:"contexts"` // of them, contexts moved from an earlier layout to a tail document
	Units    int `json:"units"`    // units of search given their session's title
	// MovedUnits are units of search moved from under their session to
	// their user's collection (see moveUnits).
	MovedUnits int    `json:"movedUnits"`
	Lists      int    `json:"lists"`    // users' lists made anew (those that differed)
	UserDocs   int    `json:"userDocs"` // documents moved from an earlier key of their user (see userkeys.go)
	After      string `json:"after"`    // the last session done: resume after it
}

// sessionsPage is how many sessions a migration reads at a time.
const sessionsPage = 100

// migrateSession moves s's context to a tail document if an earlier layout holds
// it, and gives its units its title.
func (db *DB) migrateSession(ctx context.Context, s *sessions.Session, rep *MigrateReport) error {
	moved, err := db.migrateContext(ctx, s.ID)
	if err != nil {
		return err
	}
	if moved {
		rep.Contexts++
	}
	units, err := db.moveUnits(ctx, s.ID)
	rep.MovedUnits += units
	if err != nil {
		return err
	}
	n, err := db.retitleUnits(ctx, s.ID)
	rep.Units += n
	return err
}

// moveUnits moves the units of search an earlier layout kept under the
// session (legacyRecallOf) to its user's collection (unitsOf), with the
// session's title, a page at a time, each page in a transaction that reads
// the session, the page and where it goes (a unit stored there meanwhile,
// indexed again, is kept; the old one is then only deleted); it returns
// how many it moved.
func (db *DB) moveUnits(ctx context.Context, sessionID string) (int, error) {
	total := 0
	for {
		n, more := 0, false
		err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
			n = 0
			s, err := getSession(tx, db.sessionRef(sessionID))
			if err != nil {
				return err
			}
			old, err := tx.Documents(db.legacyRecallOf(sessionID).Limit(movePage)).GetAll()
			if err != nil || len(old) == 0 {
				return err
			}
			more = len(old) == movePage
			to := make([]*firestore.DocumentRef, len(old))
			for i, o := range old {
				to[i] = db.unitsOf(s.UserID).Doc(o.Ref.ID)
			}
			there, err := tx.GetAll(to)
			if err != nil {
				return err
			}
			for i, o := range old {
				if !there[i].Exists() {
					d := o.Data()
					d["sessionTitle"] = s.Title
					if err := tx.Set(to[i], d); err != nil {
						return err
					}
					n++
				}
				if err := tx.Delete(o.Ref); err != nil {
					return err
				}
			}
			return nil
		})
		if isNotFound(err) {
			return total, nil // purged meanwhile
		}
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

// movePage is how many units a transaction of moveUnits moves (a move is
// two writes; a commit takes 500).
const movePage = 200

// migrateContext writes the tail document of a session whose context an earlier
// layout holds, deleting that layout's documents in the same commit;
// false if there was nothing to move.
func (db *DB) migrateContext(ctx context.Context, sessionID string) (bool, error) {
	moved := false
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		moved = false
		st, _, err := db.readStoredAsIs(get, sessionID)
		if err != nil || !st.exists || st.tailDoc != nil || st.s.NextSeq == 0 {
			return nil, err
		}
		if err := db.readLegacy(get, st); err != nil {
			return nil, err
		}
		w := db.newWrites()
		if _, err := db.writeContext(w, st, st.s, st.t); err != nil {
			return nil, err
		}
		moved = true
		return w, nil
	})
	return moved, translate(err)
}

// retitleUnits gives each unit of the session that does not carry its
// session's title that title; it returns how many it changed.
func (db *DB) retitleUnits(ctx context.Context, sessionID string) (int, error) {
	n := 0
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		n = 0
		s, err := getSession(tx, db.sessionRef(sessionID))
		if err != nil {
			return err
		}
		units, err := tx.Documents(db.sessionUnits(s.UserID, sessionID).Select("sessionTitle")).GetAll()
		if err != nil {
			return err
		}
		for _, u := range units {
			if t, _ := u.DataAt("sessionTitle"); t == s.Title {
				continue
			}
			if err := tx.Update(u.Ref, []firestore.Update{{Path: "sessionTitle", Value: s.Title}}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if isNotFound(err) {
		return 0, nil // purged meanwhile
	}
	return n, err
}

// rebuildList makes userID's list anew from their sessions, in a
// transaction that reads them all; false if it was right already.
func (db *DB) rebuildList(ctx context.Context, userID string) (bool, error) {
	changed := false
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		ref := db.deletedRef(userID)
		snap, err := tx.Get(ref)
		if err != nil && !isNotFound(err) {
			return err
		}
		var was deletedList
		if snap != nil && snap.Exists() {
			if err := dataTo(snap, &was); err != nil {
				return err
			}
		}
		all, err := tx.Documents(db.client.Collection(SessionsCollection).Where("userId", "==", userID)).GetAll()
		if err != nil {
			return err
		}
		now := deletedList{UserID: userID, IDs: []string{}}
		for _, snap := range all {
			s, err := decodeSession(snap)
			if err != nil {
				return err
			}
			now.apply(nil, s)
		}
		// A purge under way keeps its session's id listed until it ends.
		var purging []*firestore.DocumentRef
		for _, id := range was.IDs {
			if !slices.ContainsFunc(all, func(s *firestore.DocumentSnapshot) bool { return s.Ref.ID == id }) {
				purging = append(purging, db.markerRef(id))
			}
		}
		markers, err := tx.GetAll(purging)
		if err != nil {
			return err
		}
		for _, m := range markers {
			if m.Exists() {
				now.IDs = append(now.IDs, m.Ref.ID)
			}
		}
		if changed = !sameList(was, now); !changed {
			return nil
		}
		return tx.Set(ref, now)
	})
	return changed, translate(err)
}

// sameList reports whether two lists hold the same, in any order.
func sameList(a, b deletedList) bool {
	sorted := func(ids []string) []string {
		out := slices.Clone(ids)
		slices.Sort(out)
		return out
	}
	if !slices.Equal(sorted(a.IDs), sorted(b.IDs)) || !slices.Equal(sorted(a.Archived), sorted(b.Archived)) || len(a.Off) != len(b.Off) {
		return false
	}
	for id, spans := range a.Off {
		if !slices.Equal(spans, b.Off[id]) {
			return false
		}
	}
	return true
}
