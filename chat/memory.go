package chat

import (
	"context"

	"github.com/chatmemory/backend/longterm"
)

// The memory block in a turn's request has two parts, placed for the
// provider's prompt cache (see docs/context.md): its stable part (the
// profile, the history and the facts as of the day before, which change
// at a roll-up, once a day, or when a fact is dropped) goes first, after
// the session's instructions, byte-identical from turn to turn; its
// recent part (what was learned today), the facts chosen for this
// message when the block leaves some out, and the recalled excerpts go
// after the history, next to the message they serve, and are never
// stored with it.

// MemoryBlock is the user's long-term memory as a turn reads it.
type MemoryBlock struct {
	Text   string
	Tokens int // of Text alone
	// Source is the memory as the turn read it (nil: none was read):
	// learning after the turn starts from it instead of reading it again.
	Source *longterm.User
}

// Relevance is the memory the block was made from when the turn may add
// facts chosen by relevance to its message: when the block leaves
// embedded facts out. Nil otherwise.
func (m MemoryBlock) Relevance() *longterm.User {
	if u := m.Source; u != nil && !u.Disabled && u.BlockCut && u.VectorModel != "" {
		return u
	}
	return nil
}

// MemoryOf is the block a turn reads for u (as a store returns it), with
// u itself as its Source: no text when memory is off.
func MemoryOf(u *longterm.User) MemoryBlock {
	if u == nil {
		return MemoryBlock{}
	}
	if u.Disabled {
		return MemoryBlock{Source: u}
	}
	return MemoryBlock{Text: u.Block, Tokens: u.BlockTokens, Source: u}
}

// memoryBlock is what a turn sends of the user's memory: the block's
// stable part, and what changes more often (the block's recent part, the
// facts chosen for the message, the recalled excerpts), with the tokens
// of both as system messages.
type memoryBlock struct {
	stable, recent string
	tokens         int
}

// systemMessageTokens is what wrapping a text in a system message adds.
const systemMessageTokens = 4

// memoryFor is the memory a turn sends: the block as read, with the
// facts it leaves out that are most relevant to the turn's message when
// the message is embedded.
func (svc *Service) memoryFor(ctx context.Context, r *recaller, m MemoryBlock, sessionID string) memoryBlock {
	mem := blockOf(m)
	if m.Relevance() == nil || svc.Memory == nil || r.embedded == nil {
		return mem
	}
	type read struct {
		u   *longterm.User
		err error
	}
	facts := make(chan read, 1)
	go func() { // the facts, read beside the embedding
		u, err := svc.Memory.WithFacts(ctx, m.Relevance())
		facts <- read{u, err}
	}()
	if <-r.embedded; r.embedErr != nil {
		svc.logError(ctx, "embedding the message failed; the memory block goes without the facts relevant to it", sessionID, r.embedErr)
		return mem
	}
	got := <-facts
	if got.err != nil {
		svc.logError(ctx, "reading the long-term facts failed; the memory block goes without the facts relevant to it", sessionID, got.err)
		return mem
	}
	if text, n := svc.Memory.Relevant(got.u, r.vector); n > 0 {
		mem = mem.with(text, n)
	}
	return mem
}

// blockOf is the block as read, in its two parts.
func blockOf(m MemoryBlock) memoryBlock {
	if m.Text == "" {
		return memoryBlock{}
	}
	stable, recent := longterm.SplitBlock(m.Text)
	if stable == "" || recent == "" {
		return memoryBlock{stable: stable, recent: recent, tokens: m.Tokens + systemMessageTokens}
	}
	return memoryBlock{stable: stable, recent: recent, tokens: m.Tokens + 2*systemMessageTokens}
}

// with is the memory with text (of n tokens) added to what changes often.
func (m memoryBlock) with(text string, n int) memoryBlock {
	if m.recent == "" {
		m.recent, m.tokens = text, m.tokens+n+systemMessageTokens
		return m
	}
	m.recent, m.tokens = m.recent+"\n\n"+text, m.tokens+n
	return m
}

// parts are the system messages m is sent as: before the summary and the
// history, and after the history, next to the message; with legacy, all
// of it before them, as requests were ordered before the cache order.
func (m memoryBlock) parts(legacy bool) (first, next string) {
	if !legacy {
		return m.stable, m.recent
	}
	if m.stable == "" || m.recent == "" {
		return m.stable + m.recent, ""
	}
	return m.stable + "\n" + m.recent, ""
}
