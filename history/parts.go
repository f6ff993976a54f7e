package history

import (
	"strings"

	"github.com/chatmemory/backend/kernel/errs"
)

// MaxAttachments bounds the files one message carries.
const MaxAttachments = 10

// ImageTurns is how many of the latest user messages send their images
// to the model; an image in an older message is sent as its name
// ("[image: cat.png]"), and counted so.
const ImageTurns = 4

// Part is a file a user's message carries: what is known of an uploaded
// attachment (see the attachments package), never its bytes. The stored
// message keeps it as it was when the message was written.
type Part struct {
	ID     string `json:"id" firestore:"id"`
	Type   string `json:"type" firestore:"type"` // a MIME type, read from the file's bytes
	Name   string `json:"name" firestore:"name"`
	Alt    string `json:"alt,omitempty" firestore:"alt,omitempty"`
	Size   int64  `json:"size" firestore:"size"`
	Width  int    `json:"width,omitempty" firestore:"width,omitempty"` // images only
	Height int    `json:"height,omitempty" firestore:"height,omitempty"`
	// Tokens is what the part adds to a prompt when it is sent whole: an
	// image's by OpenAI's formula, a document's text.
	Tokens int `json:"tokens" firestore:"tokens"`
	// Omitted, in a context, is an image sent as its name only (it is
	// older than the last ImageTurns user messages).
	Omitted bool `json:"omitted,omitempty" firestore:"-"`
}

// Label is how the part is named to the model where it is not sent:
// "[image: cat.png]" or "[document: notes.pdf]".
func (p Part) Label() string {
	kind := "document"
	if p.IsImage() {
		kind = "image"
	}
	return "[" + kind + ": " + p.Name + "]"
}

// IsImage reports whether p is an image (else a document sent as text).
func (p Part) IsImage() bool { return strings.HasPrefix(p.Type, "image/") }

// PartIDs are the ids of parts, in order (nil for none).
func PartIDs(parts []Part) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p.ID)
	}
	return out
}

// checkAttachments checks the attachment ids of the draft messages[i].
func (d *Draft) checkAttachments(i int) error {
	if len(d.Attachments) == 0 {
		return nil
	}
	if d.Role != RoleUser {
		return invalid(i, "only user messages carry attachments")
	}
	if len(d.Attachments) > MaxAttachments {
		return errs.Errorf(errs.EINVALID, "messages[%d].attachments: at most %d files in one message", i, MaxAttachments)
	}
	seen := map[string]bool{}
	for j, id := range d.Attachments {
		if !idRE.MatchString(id) || seen[id] {
			return errs.Errorf(errs.EINVALID, "messages[%d].attachments[%d]: an attachment's id, once per message, is expected", i, j)
		}
		seen[id] = true
	}
	return nil
}

// partsOf is the parts a message stores for d: its resolved Parts.
func partsOf(d *Draft) []Part {
	if len(d.Parts) == 0 {
		return nil
	}
	return append([]Part(nil), d.Parts...)
}

// labelTokens bounds the tokens of a part's label: about a token for
// every three bytes of it.
func labelTokens(p *Part) int { return 2 + (len(p.Label())+2)/3 }
