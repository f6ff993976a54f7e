package chat

import (
	"context"
	"errors"

	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/sessions"
)

// TurnStore is the storage of a turn. A turn is planned as one unit: one
// batched read of everything it needs, one commit that claims it (the
// user's message, the session's counters and context, the rate-limit slot,
// the idempotency key), and after the model one commit that finishes it
// (the reply, counters, context and the tokens spent).
type TurnStore interface {
	// RunTurn reads what q names in one round trip (or, given prev, the
	// state a RunTurn returned, starts from it without reading), calls plan
	// and commits the write plan returns in one commit, on condition that
	// nothing plan was given changed meanwhile; if something did, it reads
	// again and plans again. A nil write commits nothing. It returns the
	// state as committed. plan may run more than once and has no other
	// effects (it changes nothing it is given); its errors are returned as
	// they are, with the state plan refused, as read (so that a cache in
	// front of the store may keep it).
	//
	// Without prev and AskedID, a store may first plan from a state that
	// leaves out the message under Key (and, for an unkeyed turn, ReplyID,
	// a new id): the write that claims a turn creates the message under
	// Key, so it lands only if there was none. A plan that refuses or
	// writes nothing on such a state is given the full one, for its
	// refusal may be a replay. A store with a cache in front of it may
	// likewise plan from a state the cache kept of the session and of the
	// user's slots instead of reading them, and commit at once, on
	// condition that they did not change; it then reads Day's spend, the
	// memory block and the reply under Key beside the commit. The state
	// returned holds the spend as read then, which may exceed what plan
	// was given: the caller checks it before the model is called.
	RunTurn(ctx context.Context, q TurnQuery, prev *TurnState, plan func(*TurnState) (*TurnWrite, error)) (*TurnState, error)
	// ReadTurn reads what q names, for a caller that writes nothing (a
	// preview of the next context). A store may read less when what it
	// kept of the session is current, at the cost of a second round trip
	// when it proves not to be.
	ReadTurn(ctx context.Context, q TurnQuery) (*TurnState, error)
	// RunAppend stores messages a client composed itself as a turn stores
	// its message: it reads what q names in one round trip (the session,
	// its tail, the batch stored under q.Key, the user's per-minute message
	// quota and spend on q.Day), calls plan, and commits the write plan
	// returns in one commit (the messages, named by the key or by ids it
	// chooses once, with the session, tail and quota, and the tokens
	// added to the day), on condition that nothing plan was given changed
	// meanwhile; if something did, it reads and plans again. A nil write
	// commits nothing. ENOTFOUND if the session does not exist. It returns
	// the version of the session and its context the commit left (with a
	// nil write, the one read). With q.IfMatch the store may start from a
	// state it kept of that version instead of reading the session and
	// its context, and from what it kept of the user's quota and spend
	// (then reading nothing): its commit is conditioned on them all the
	// same, the spend included.
	RunAppend(ctx context.Context, q AppendQuery, plan func(*AppendState) (*AppendWrite, error)) (string, error)
}

// AppendQuery names what an append reads.
type AppendQuery struct {
	UserID, SessionID string
	Key               string // the batch's clientMessageId; "" for none
	Day               string // the UTC day whose spend to read
	IfMatch           string // the version the caller read the context at; "" for any
}

// AppendState is what an append read.
type AppendState struct {
	Session *sessions.Session
	Tail    *history.Tail
	Stored  []history.Message // the batch stored under the key, if any
	Usage   Usage             // the per-minute message quota and the day's spend
	Version string            // of the session and its context, as read
	// MayHaveLanded: the batch Stored may be this append's own, stored by
	// a commit it tried whose answer was lost (the batch is where that
	// commit put it), rather than another request's.
	MayHaveLanded bool
}

// AppendWrite is what an append's commit writes.
type AppendWrite struct {
	Session  *sessions.Session
	Tail     *history.Tail
	Messages []history.Message // created; the store names those without an id
	Quota    Usage             // the per-minute message quota to store
	Tokens   int               // added to the user's spend on the query's Day
}

// TurnQuery names what a turn reads.
type TurnQuery struct {
	UserID    string
	SessionID string
	New       bool   // the session may not exist yet (plan then creates it)
	Key       string // the turn's clientMessageId; "" for none
	// AskedID, if set, names the message the turn answers anew (a
	// regeneration), read as Asked instead of the message stored under
	// Key; the message under Key is then read only to tell whether the
	// key names one (TurnState.KeyUsed).
	AskedID string
	// ReplyID is the reply the turn writes, read as Answer: a retry of a
	// keyed turn finds it there, and a commit whose answer was lost learns
	// whether it landed.
	ReplyID string
	Day     string // the UTC day whose token spend to read, YYYY-MM-DD; "" for none (a turn's own commit needs it)
	// Slots are which of the user's rate-limit slots to read (0 to
	// MaxTurnsPerMinute-1), in the order of TurnState.Slots; none: no limit
	// to admit under. TurnWrite.Slot is an index into them.
	Slots  []int
	Memory bool // read the user's long-term memory block
	Draft  bool // read the session's draft (a streaming turn)
	// Deleted reads the ids of the user's deleted sessions (a turn that
	// recalls from all of them: see TurnState.Deleted).
	Deleted bool
}

// Version is a store's record of what it read or wrote (an update time,
// a counter), for the conditions of its later commits: opaque to all but
// the store that made it, which alone may look inside.
type Version any

// TurnState is what a turn read (or, after a commit, what it wrote).
type TurnState struct {
	Session *sessions.Session // nil if there is none
	Tail    *history.Tail
	Asked   *history.Message // the message the turn answers: AskedID's, or the one stored under Key
	Answer  *history.Message // the message stored as ReplyID, if any
	Slots   []int64          // the unix minute each slot of the query's was last taken in; 0 never
	// SlotVersions are the store's record of each of Slots, for its
	// conditions (as Version is of the rest).
	SlotVersions []Version
	DayTokens    int // spent on Day
	// KeyUsed: with AskedID and Key, a message is stored under Key.
	KeyUsed bool
	Memory  MemoryBlock
	// Deleted are the ids of the user's deleted sessions, when the query
	// asked for them (nil when it did not; empty when there are none). A
	// store keeps them in one place, changed in the same commit as every
	// change of a session's status to or from deleted and every purge.
	Deleted []string
	// OffPath are, with Deleted, the messages of each of the user's
	// sessions that are off its active branch (see sessions.OffPath),
	// kept beside the deleted ids and changed in the same commit as the
	// branch: a recall from all sessions leaves them out without reading
	// the sessions it found.
	OffPath map[string]sessions.Path

	// DraftReplyID is the reply the session's draft follows ("" if none),
	// DraftText its text so far.
	DraftReplyID, DraftText string

	// ContextVersion names the session and its context as read: it
	// changes whenever either is written (an opaque token; "" if there is
	// no session). An append given it as IfMatch lands only if it holds.
	ContextVersion string

	// Version is the store's record of what it read, for its conditions;
	// DraftVersion that of the draft (as read, or as a commit started it).
	Version      Version
	DraftVersion Version
}

// TurnWrite is what one commit of a turn writes.
type TurnWrite struct {
	Session  *sessions.Session // created if the state had none, else replaced
	Tail     *history.Tail     // nil: unchanged
	Messages []history.Message // created; each has its ID
	// Slot, if at least 0, is taken for Minute.
	Slot   int
	Minute int64
	Tokens int // added to the user's spend on the query's Day
	// ByModel, if set, are the reply's own tokens (its input, the part of
	// it served from the provider's cache, and its output) by the model
	// that answered, added to the day's spend by model.
	ByModel map[string]ModelTokens
	Draft   *DraftWrite
	// Job, if set, is created in the same commit: the work that follows
	// the reply it stores (the outbox; see Job).
	Job *Job
}

// NoSlot is a TurnWrite's Slot when it takes none.
const NoSlot = -1

// DraftWrite starts or ends the draft of a streaming reply in a turn's
// commit. A session has one draft, that of its latest streaming reply: a
// second streaming turn in the session takes it over, and the first is
// then no longer followed live (its own stream goes on). Ending a draft is
// conditioned on the draft being as the state read it.
type DraftWrite struct {
	ReplyID       string
	UserMessageID string // on Create: the message the reply answers
	Create        bool   // start it, empty; else delete it
}

// Drafts keep the partial text of a streaming reply where other clients
// (another tab, a reloaded page, a client behind a proxy that buffers
// server-sent events) can follow it, and carry a request to stop it from
// any connection or instance.
type Drafts interface {
	// SaveDraft stores d's text as the partial reply and reports whether a
	// stop was requested. d.Version is the store's record of its last
	// write of the draft; SaveDraft updates it.
	SaveDraft(ctx context.Context, d *Draft) (stop bool, err error)
	// ErrDraftTaken (from SaveDraft) means another streaming turn of the
	// session has the draft now: stop saving this one.
	// RequestStop marks the reply in progress replyID of session sessionID
	// to be stopped. ENOTFOUND if userID has no such reply in progress.
	RequestStop(ctx context.Context, userID, sessionID, replyID string) error
}

// Draft is a streaming reply's partial text.
type Draft struct {
	SessionID, ReplyID, UserID string
	Text                       string
	Version                    Version
}

// ErrDraftTaken is SaveDraft's answer once the session's draft follows
// another reply.
var ErrDraftTaken = errors.New("chat: the session's draft follows another reply")
