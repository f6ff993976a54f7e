package cache_test

import (
	"fmt"
	"testing"

	"github.com/chatmemory/backend/cache"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/inprocdb"
)

// TestHints: a session's hint is kept until it is set anew (a zero one
// forgets it); past the bound every hint is dropped rather than one
// evicted (a hint is a guess: losing one costs an embedding).
func TestHints(t *testing.T) {
	c := cache.New(inprocdb.New(), cache.DefaultBytes)
	all := chat.Hint{Embed: true, All: true}
	for _, step := range []struct {
		set  *chat.Hint
		want chat.Hint
	}{
		{nil, chat.Hint{}},
		{&all, all},
		{&chat.Hint{Embed: true}, chat.Hint{Embed: true}},
		{&chat.Hint{}, chat.Hint{}},
	} {
		if step.set != nil {
			c.SetHint("s1", *step.set)
		}
		if got := c.Hint("s1"); got != step.want {
			t.Errorf("after setting %+v: %+v, want %+v", step.set, got, step.want)
		}
	}
	c.SetHint("s1", all)
	for i := range 10_000 {
		c.SetHint(fmt.Sprint("other-", i), all)
	}
	if got, last := c.Hint("s1"), c.Hint("other-9999"); got != (chat.Hint{}) || last != all {
		t.Errorf("past the bound: the first %+v, the last %+v; want the first dropped, the last kept", got, last)
	}
}
