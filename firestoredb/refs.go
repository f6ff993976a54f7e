package firestoredb

// Where each document lives: the references every read and write goes
// through, with their paths ("Data in Firestore" in docs/architecture.md
// lists their fields).

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/kernel/ids"
)

// messagesOf is chat_sessions/{sessionID}/messages.
func (db *DB) messagesOf(sessionID string) *firestore.CollectionRef {
	return db.sessionRef(sessionID).Collection(MessagesCollection)
}

// tailRef is chat_sessions/{sessionID}/context/tail document.
func (db *DB) tailRef(sessionID string) *firestore.DocumentRef {
	return db.contextOf(sessionID).Doc(tailDocID)
}

// draftRef is chat_sessions/{sessionID}/context/draft.
func (db *DB) draftRef(sessionID string) *firestore.DocumentRef {
	return db.contextOf(sessionID).Doc(DraftDocID)
}

// contextOf is chat_sessions/{sessionID}/context.
func (db *DB) contextOf(sessionID string) *firestore.CollectionRef {
	return db.sessionRef(sessionID).Collection(ContextCollection)
}

// legacyRecallOf is chat_sessions/{sessionID}/recall, where units of
// search were kept before they moved to their user's unitsOf (cmd/migrate
// moves them; a purge still deletes any left there).
func (db *DB) legacyRecallOf(sessionID string) *firestore.CollectionRef {
	return db.sessionRef(sessionID).Collection(RecallCollection)
}

// sessionUnits is the units of sessionID among userID's.
func (db *DB) sessionUnits(userID, sessionID string) firestore.Query {
	return db.unitsOf(userID).Where("sessionId", "==", sessionID)
}

// unitsOf is chat_usage/{user}/recall: the user's units of search, one
// collection a user, so that what a search asks is bounded by the user's
// own units (the emulator answers a collection-group query by going
// through every user's).
func (db *DB) unitsOf(userID string) *firestore.CollectionRef {
	return db.usageRef(userID).Collection(RecallCollection)
}

// sessionRef is chat_sessions/{id}.
func (db *DB) sessionRef(id string) *firestore.DocumentRef {
	return db.client.Collection(SessionsCollection).Doc(id)
}

// markerRef is chat_purges/{id}.
func (db *DB) markerRef(id string) *firestore.DocumentRef {
	return db.client.Collection(PurgesCollection).Doc(id)
}

// dayRef is chat_usage/{user}/usageDays/{day}.
func (db *DB) dayRef(userID, day string) *firestore.DocumentRef {
	return db.usageRef(userID).Collection(UsageDaysCollection).Doc(day)
}

// slotRef is chat_usage/{user}/turnSlots/s{i}, i in two digits.
func (db *DB) slotRef(userID string, i int) *firestore.DocumentRef {
	return db.usageRef(userID).Collection(TurnSlotsCollection).Doc(fmt.Sprintf("s%02d", i))
}

// deletedRef is chat_usage/{user}/sessionLists/deleted.
func (db *DB) deletedRef(userID string) *firestore.DocumentRef {
	return db.usageRef(userID).Collection(SessionListsCollection).Doc(deletedListDocID)
}

// usageRef is chat_usage/{user}.
func (db *DB) usageRef(userID string) *firestore.DocumentRef {
	return db.client.Collection(UsageCollection).Doc(UserDocID(userID))
}

// accountRef is chat_accounts/{user}.
func (db *DB) accountRef(userID string) *firestore.DocumentRef {
	return db.client.Collection(AccountsCollection).Doc(UserDocID(userID))
}

// liveFactsRef is users/{user}/memory/facts.
func (db *DB) liveFactsRef(userID string) *firestore.DocumentRef {
	return db.memoryRef(userID).Collection(MemoryCollection).Doc(liveFactsDocID)
}

// memoryRef is users/{user}.
func (db *DB) memoryRef(userID string) *firestore.DocumentRef {
	return db.client.Collection(UsersCollection).Doc(UserDocID(userID))
}

// UserDocID is {user} in those paths: the uid itself when it is a safe
// id (letters, digits, '_' and '-'), else "~" and the uid in unpadded
// base64url. No safe id holds a "~", so no uid can take another's key (a
// hash with a letter in front, as earlier versions kept, is a safe id
// that an account could have as its uid), and the encoding is reversible,
// so no two uids share one. Firebase uids have at most 128 characters:
// the key stays far below Firestore's 1,500 bytes.
func UserDocID(uid string) string {
	if ids.Valid(uid) {
		return uid
	}
	return encodedUserPrefix + base64.RawURLEncoding.EncodeToString([]byte(uid))
}

// encodedUserPrefix starts the key of a uid that is not a safe id.
const encodedUserPrefix = "~"

// legacyUserDocID is the key earlier versions gave a uid that is not a
// safe id ("h" and 40 hex digits of its SHA-256), from which Migrate moves
// its documents.
func legacyUserDocID(uid string) string {
	h := sha256.Sum256([]byte(uid))
	return "h" + hex.EncodeToString(h[:20])
}
