package history

import (
	"testing"
)

func TestTailAdd(t *testing.T) {
	var tl Tail
	tl.add(seqd(msg(RoleUser, 10), calls(10, "c1"), result("c1", 10), msg(RoleAssistant, 10)), 25)
	// Dropping the call drops its result with it.
	if got := seqs(tl.Messages); got != "3" {
		t.Errorf("tail %q", got)
	}
	tl = Tail{}
	tl.add(seqd(msg(RoleUser, 10), msg(RoleAssistant, 10)), 20)
	if got := seqs(tl.Messages); got != "0 1" {
		t.Errorf("exact fit: %q", got)
	}
	// The newest message stays even when it alone is over the budget.
	tl = Tail{}
	tl.add(seqd(msg(RoleUser, 100)), 20)
	if len(tl.Messages) != 1 {
		t.Errorf("lost the newest message")
	}
	// The byte cap binds too.
	tl = Tail{}
	big := make([]Message, 30)
	for i := range big {
		big[i] = Message{Role: RoleUser, Tokens: 1, Content: string(make([]byte, 32<<10))}
	}
	tl.add(seqd(big...), 1<<30)
	if b := 0; true {
		for i := range tl.Messages {
			b += StoredBytes(&tl.Messages[i])
		}
		if b > MaxTailBytes || len(tl.Messages) == 30 {
			t.Errorf("tail holds %d bytes in %d messages", b, len(tl.Messages))
		}
	}
}
