package chat

import (
	"context"
	"time"

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
	// effects; its errors are returned as they are.
	RunTurn(ctx context.Context, q TurnQuery, prev *TurnState, plan func(*TurnState) (*TurnWrite, error)) (*TurnState, error)
}

// TurnQuery names what a turn reads.
type TurnQuery struct {
	UserID    string
	SessionID string
	New       bool   // the session may not exist yet (plan then creates it)
	Key       string // the turn's clientMessageId; "" for none
	Day       string // the UTC day whose token spend to read, YYYY-MM-DD
	Slots     int    // how many rate-limit slots the user has (0: none to read)
	Memory    bool   // read the user's long-term memory block
}

// TurnState is what a turn read (or, after a commit, what it wrote).
type TurnState struct {
	Session   *sessions.Session // nil if there is none
	Tail      *history.Tail
	Asked     *history.Message // the user message stored under Key, if any
	Answer    *history.Message // the reply to it, if any
	Slots     []int64          // the unix minute each slot was last taken in; 0 never
	DayTokens int              // spent on Day
	Memory    MemoryBlock

	// Version is the store's record of what it read, for its conditions.
	Version any
}

// MemoryBlock is the user's long-term memory as a turn sends it.
type MemoryBlock struct {
	Text   string
	Tokens int // of Text alone
}

// TurnWrite is what one commit of a turn writes.
type TurnWrite struct {
	Session  *sessions.Session // created if the state had none, else replaced
	Tail     *history.Tail     // nil: unchanged
	Messages []history.Message // created; each has its ID
	// Lease, if set, moves the ReplyBy of the stored message Asked.
	Lease *time.Time
	// Slot, if at least 0, is taken for Minute.
	Slot   int
	Minute int64
	Tokens int // added to the user's spend on the query's Day
}

// NoSlot is a TurnWrite's Slot when it takes none.
const NoSlot = -1
