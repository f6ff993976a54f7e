package recall

import (
	"strings"
	"testing"

	"github.com/chatmemory/backend/history"
)

// TestUnitFilesText: a unit is weighed by its messages' files too: each
// one's name, alt text and a document's text (when the index was given
// it), as part of the message holding them.
func TestUnitFilesText(t *testing.T) {
	q := history.Message{ID: "q", Seq: 0, Role: history.RoleUser, Content: "keep these", Attachments: []history.Part{
		{ID: "i", Type: "image/png", Name: "zanzibar-harbour.png", Alt: "a tabby kitten"},
		{ID: "d", Type: "application/pdf", Name: "minutes.pdf"}}}
	r := history.Message{ID: "r", Seq: 1, ParentSeq: 0, Role: history.RoleAssistant, Content: "noted"}
	for _, c := range []struct {
		name  string
		files map[string]string
		has   []string
		lacks []string
	}{
		{"names and alt", nil, []string{"zanzibar", "harbour", "tabbi", "kitten", "minut"}, []string{"marmalad"}},
		{"a document's text", map[string]string{"d": "the marmalade budget"}, []string{"marmalad", "budget", "zanzibar"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			units := Units([]history.Message{q, r})
			if len(units) != 1 {
				t.Fatalf("%d units", len(units))
			}
			units[0].Files = c.files
			terms := " " + strings.Join(Terms(units[0].text()), " ") + " "
			for _, w := range c.has {
				if !strings.Contains(terms, " "+w) {
					t.Errorf("terms %q lack %q", terms, w)
				}
			}
			for _, w := range c.lacks {
				if strings.Contains(terms, " "+w) {
					t.Errorf("terms %q hold %q", terms, w)
				}
			}
		})
	}
}
