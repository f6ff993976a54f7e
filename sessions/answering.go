package sessions

import (
	"time"
)

// Answering is the turn that holds the right to answer a message of the
// session: at most one at a time. It is set in the commit that claims the
// turn and cleared in the commit that stores its reply (or gives the turn
// back when it fails), so it costs no write of its own: the session is
// written in both. While it holds, no other turn, regeneration, edit or
// append starts in the session (ECONFLICT with a Retry-After): the tree
// stays whole (a reply's parent is always its question) and a retry of the
// same request learns that it is still in progress. A lease whose holder
// died runs out at Until and is then taken over.
type Answering struct {
	Seq     int       `firestore:"seq"`     // the message being answered
	ReplyID string    `firestore:"replyId"` // the id its reply will have
	Key     string    `firestore:"key,omitempty"`
	Op      Operation `firestore:"op"`
	// Token names the request holding the lease, so that a request whose
	// commit's answer was lost can tell its own claim from another's.
	Token string    `firestore:"token"`
	Until time.Time `firestore:"until"`
}

// Operation is what a keyed request does: one key names one operation on
// one session, and reused for another, it is refused.
type Operation struct {
	Kind   OpKind `firestore:"kind"`
	Target string `firestore:"target,omitempty"` // the message regenerated or edited; tool results' digest
}

// OpKind is the kind of a keyed request.
type OpKind string

const (
	OpTurn       OpKind = "turn"
	OpRegenerate OpKind = "regenerate"
	OpEdit       OpKind = "edit"
	OpTools      OpKind = "toolResults" // tool results sent to continue a turn
)
