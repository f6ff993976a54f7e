package app

import (
	"fmt"

	"github.com/chatmemory/backend/history"
)

// loadTokens starts loading the tokenizer's encodings (about half a
// second of CPU) and returns a Tokens that waits for them on first use: a
// command that opens the backend and counts nothing until later (the
// sweep counts only when a roll-up writes a memory block, after its
// retention work) does not wait for them first.
func loadTokens() Tokens {
	t := &loadingTokens{ready: make(chan struct{})}
	go func() {
		defer close(t.ready)
		t.tok, t.err = history.NewTikToken()
	}()
	return t
}

// loadingTokens is the tokenizer, once loaded.
type loadingTokens struct {
	ready chan struct{}
	tok   *history.TikToken
	err   error
}

func (t *loadingTokens) Count(model string, m *history.Message) int {
	return t.loaded().Count(model, m)
}

func (t *loadingTokens) Text(model, s string) int { return t.loaded().Text(model, s) }

// loaded waits for the encodings. They are compiled into the binary, so
// failing to load them is a broken build, which no request can work
// around: it panics saying so.
func (t *loadingTokens) loaded() *history.TikToken {
	<-t.ready
	if t.err != nil {
		panic(fmt.Sprintf("app: the tokenizer's encodings, compiled in, did not load: %v", t.err))
	}
	return t.tok
}
