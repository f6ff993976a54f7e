package paging

import (
	"testing"

	"github.com/chatmemory/backend/kernel/errs"
)

func TestLimit(t *testing.T) {
	for n, want := range map[int]int{0: DefaultSize, 1: 1, MaxSize: MaxSize, -1: -1, MaxSize + 1: -1} {
		got, err := Limit(n)
		if want < 0 {
			if errs.CodeOf(err) != errs.EINVALID {
				t.Errorf("Limit(%d): %v, want invalid", n, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("Limit(%d) = %d, %v; want %d", n, got, err, want)
		}
	}
}

func TestTokens(t *testing.T) {
	type cursor struct {
		Seq int    `json:"s"`
		ID  string `json:"i"`
	}
	var got cursor
	if err := Decode(Encode(cursor{Seq: 7, ID: "abc"}), &got); err != nil || got != (cursor{7, "abc"}) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, tok := range []string{"", "!!!", Encode(map[string]int{"x": 1}), Encode("a string")} {
		if err := Decode(tok, &got); errs.CodeOf(err) != errs.EINVALID || errs.Message(err) != "malformed pageToken" {
			t.Errorf("Decode(%q): %v", tok, err)
		}
	}
}
