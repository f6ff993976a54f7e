package history

import (
	"strings"
	"testing"

	"github.com/chatmemory/backend/kernel/errs"
)

// TestDraftAttachments: which drafts may carry attachments, and the field
// a refusal names.
func TestDraftAttachments(t *testing.T) {
	many := make([]string, MaxAttachments+1)
	for i := range many {
		many[i] = "a" + strings.Repeat("x", i+1)
	}
	for _, c := range []struct {
		name string
		d    Draft
		err  string // "" when taken
	}{
		{"text and a file", Draft{Role: RoleUser, Content: "look", Attachments: []string{"a1"}}, ""},
		{"a file alone", Draft{Role: RoleUser, Attachments: []string{"a1"}}, ""},
		{"nothing", Draft{Role: RoleUser}, "messages[0]: content is empty"},
		{"on a reply", Draft{Role: RoleAssistant, Content: "x", Attachments: []string{"a1"}}, "messages[0]: only user messages carry attachments"},
		{"too many", Draft{Role: RoleUser, Attachments: many}, "messages[0].attachments: at most 10"},
		{"twice", Draft{Role: RoleUser, Attachments: []string{"a1", "a1"}}, "messages[0].attachments[1]:"},
		{"not an id", Draft{Role: RoleUser, Attachments: []string{"a b"}}, "messages[0].attachments[0]:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Validate("", c.d)
			if c.err == "" && err != nil || c.err != "" && (errs.CodeOf(err) != errs.EINVALID || !strings.HasPrefix(errs.Message(err), c.err)) {
				t.Fatalf("Validate = %v, want %q", err, c.err)
			}
		})
	}
}

// TestKeepImages: the images of user messages before the last n are sent
// by name: their parts Omitted, their tokens the label's, the stored
// messages untouched; documents always whole.
func TestKeepImages(t *testing.T) {
	img := func(id string) Part { return Part{ID: id, Type: "image/png", Name: id + ".png", Tokens: 765} }
	doc := Part{ID: "d", Type: "application/pdf", Name: "d.pdf", Tokens: 40}
	msgs := []Message{
		{Seq: 0, Role: RoleUser, Tokens: 800, Attachments: []Part{img("a"), doc}},
		{Seq: 1, Role: RoleAssistant, Tokens: 10},
		{Seq: 2, Role: RoleUser, Tokens: 790, Attachments: []Part{img("b")}},
		{Seq: 3, Role: RoleAssistant, Tokens: 10},
		{Seq: 4, Role: RoleUser, Tokens: 5},
	}
	for _, c := range []struct {
		n       int
		omitted []bool // of messages 0 and 2's first part
	}{
		{3, []bool{false, false}},
		{2, []bool{true, false}},
		{1, []bool{true, true}},
	} {
		got := keepImages(msgs, c.n)
		for i, seq := range []int{0, 2} {
			p := got[seq].Attachments[0]
			if p.Omitted != c.omitted[i] {
				t.Fatalf("n=%d: message %d's image omitted %v, want %v", c.n, seq, p.Omitted, c.omitted[i])
			}
			if want := msgs[seq].Tokens; p.Omitted {
				if want = want - 765 + labelTokens(&p); got[seq].Tokens != want {
					t.Fatalf("n=%d: message %d counts %d tokens, want %d", c.n, seq, got[seq].Tokens, want)
				}
			}
		}
		if got[0].Attachments[1].Omitted {
			t.Fatal("a document was omitted")
		}
	}
	if msgs[0].Attachments[0].Omitted || msgs[0].Tokens != 800 {
		t.Fatal("keepImages changed the messages it was given")
	}
	if label := img("a").Label(); label != "[image: a.png]" || doc.Label() != "[document: d.pdf]" {
		t.Fatalf("labels %q %q", label, doc.Label())
	}
}
