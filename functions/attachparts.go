package functions

import (
	"net/url"
	"strings"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// attachmentOut is an attachment's record as the API answers it, with
// the URL that downloads it and that an AI SDK FileUIPart gives as its url.
type attachmentOut struct {
	*attachments.Attachment
	URL string `json:"url"`
}

func attachmentJSON(a *attachments.Attachment) attachmentOut {
	return attachmentOut{Attachment: a, URL: a.URL()}
}

// userParts is a stored user message as a UIMessage's parts: its text,
// then a FileUIPart for each attachment (its url the API's
// /attachments/{id}, which answers the bytes to the owner's token).
func userParts(m history.Message) []map[string]any {
	var parts []map[string]any
	if m.Content != "" || len(m.Attachments) == 0 {
		parts = append(parts, map[string]any{"type": "text", "text": m.Content})
	}
	for _, p := range m.Attachments {
		parts = append(parts, map[string]any{"type": "file", "mediaType": p.Type, "url": "/attachments/" + p.ID, "filename": p.Name})
	}
	return parts
}

// fileAttachment is the attachment a FileUIPart names by its url: one
// whose path ends in /attachments/{id}, relative or absolute (the url
// POST /attachments answered, or the API's address before it). A data:
// URL, or any other, is refused: files are uploaded first.
func fileAttachment(field, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err == nil && u.Scheme != "data" {
		if i := strings.LastIndex(u.Path, "/attachments/"); i >= 0 {
			if id := u.Path[i+len("/attachments/"):]; id != "" && !strings.Contains(id, "/") {
				return id, nil
			}
		}
	}
	return "", errs.Errorf(errs.EINVALID, "%s: a file part's url must name an uploaded attachment (upload the file with POST /attachments and send the url it answers, /attachments/{id})", field)
}
