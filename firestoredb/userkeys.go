package firestoredb

import (
	"context"
	"maps"
	"regexp"
	"slices"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/kernel/ids"
)

// Earlier versions kept the documents of a user whose uid is not a safe
// id under "h" and a hash (legacyUserDocID), a key an account could have
// as its uid. Migrate moves them to today's key (UserDocID), document by
// document: each one that says it is that user's (its userId), so that
// the documents of an account whose uid is literally the old key stay
// where they are, its own.

// userRoots are the collections keyed by user.
var userRoots = []string{UsersCollection, UsageCollection, AccountsCollection}

// legacyKey is the form of legacyUserDocID.
var legacyKey = regexp.MustCompile(`^h[0-9a-f]{40}$`)

// migrateUserKeys moves the documents of every user under an earlier
// key: those of users (the owners of the sessions looked at) whose uid is
// not a safe id, and of every user a root document under such a key names.
// It returns how many documents it moved.
func (db *DB) migrateUserKeys(ctx context.Context, users map[string]bool) (int, error) {
	uids, err := db.legacyKeyed(ctx)
	if err != nil {
		return 0, err
	}
	for u := range users {
		if !ids.Valid(u) {
			uids[u] = true
		}
	}
	moved := 0
	for _, uid := range slices.Sorted(maps.Keys(uids)) {
		for _, c := range userRoots {
			col := db.client.Collection(c)
			n, err := db.moveTree(ctx, uid, col.Doc(legacyUserDocID(uid)), col.Doc(UserDocID(uid)))
			moved += n
			if err != nil {
				return moved, err
			}
		}
	}
	return moved, nil
}

// legacyKeyed returns the users that root documents under an earlier
// key name as theirs: the documents whose id starts with "h" are read
// (their userId only).
func (db *DB) legacyKeyed(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	for _, c := range userRoots {
		q := db.client.Collection(c).OrderBy(firestore.DocumentID, firestore.Asc).StartAt("h").EndBefore("i").Select("userId")
		snaps, err := q.Documents(ctx).GetAll()
		if err != nil {
			return nil, translate(err)
		}
		for _, s := range snaps {
			uid, _ := s.DataAt("userId")
			if u, ok := uid.(string); ok && legacyKey.MatchString(s.Ref.ID) && !ids.Valid(u) && legacyUserDocID(u) == s.Ref.ID {
				out[u] = true
			}
		}
	}
	return out, nil
}

// moveTree moves from, if it is uid's, and every document under it that
// is uid's, to the same place under to: each is created there (one there
// already, written since, is newer and stays) and deleted here.
func (db *DB) moveTree(ctx context.Context, uid string, from, to *firestore.DocumentRef) (int, error) {
	moved := 0
	cols := from.Collections(ctx)
	for {
		col, err := cols.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			return moved, translate(err)
		}
		refs, err := col.DocumentRefs(ctx).GetAll()
		if err != nil {
			return moved, translate(err)
		}
		for _, ref := range refs {
			n, err := db.moveTree(ctx, uid, ref, to.Collection(col.ID).Doc(ref.ID))
			moved += n
			if err != nil {
				return moved, err
			}
		}
	}
	ok, err := db.moveDoc(ctx, uid, from, to)
	if ok {
		moved++
	}
	return moved, err
}

// moveDoc moves from to to if it exists and is uid's; false if it was
// not moved.
func (db *DB) moveDoc(ctx context.Context, uid string, from, to *firestore.DocumentRef) (bool, error) {
	snap, err := from.Get(ctx)
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	if err != nil {
		return false, translate(err)
	}
	if owner, _ := snap.DataAt("userId"); owner != uid {
		return false, nil // another account's, whose uid is this key
	}
	if _, err := to.Create(ctx, snap.Data()); err != nil && status.Code(err) != codes.AlreadyExists {
		return false, translate(err)
	}
	if _, err := from.Delete(ctx, firestore.LastUpdateTime(snap.UpdateTime)); err != nil {
		return false, translate(err)
	}
	return true, nil
}
