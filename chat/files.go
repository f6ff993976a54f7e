package chat

import (
	"context"
	"encoding/base64"
	"io"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/kernel/errs"
)

// PartContent is what the model is sent of one attachment: an image as a
// URL it can read (a data: URL of its bytes), a document as text.
type PartContent struct {
	URL  string
	Text string
}

// DefaultImageDetail is the detail images are sent at (OpenAI's "auto":
// tokens are counted as "high").
const DefaultImageDetail = "auto"

// attach finds the attachments d names (its ids, field naming them in
// errors) among the user's uploads and makes them d's parts, each with
// the tokens it adds to a prompt, then records that a message of
// sessionID names them. An id that is not one of the user's uploads,
// another user's included, is "no such attachment".
func (svc *Service) attach(ctx context.Context, userID, sessionID string, d *history.Draft, field string) error {
	if len(d.Attachments) == 0 {
		return nil
	}
	if svc.Files == nil {
		return errs.Errorf(errs.EINVALID, "%s: this server keeps no attachments", field)
	}
	d.Parts = make([]history.Part, 0, len(d.Attachments))
	for j, id := range d.Attachments {
		a, err := svc.Files.Get(ctx, userID, id)
		if errs.CodeOf(err) == errs.ENOTFOUND {
			return errs.Errorf(errs.EINVALID, "%s[%d]: no such attachment %q (upload it with POST /attachments)", field, j, id)
		}
		if err != nil {
			return err
		}
		if a.SessionID != "" && a.SessionID != sessionID {
			return errs.Errorf(errs.EINVALID, "%s[%d]: attachment %q belongs to another conversation; upload it again", field, j, id)
		}
		d.Parts = append(d.Parts, svc.partOf(a))
	}
	for _, id := range d.Attachments {
		if err := svc.Files.Store.ReferenceAttachment(ctx, userID, id, sessionID); err != nil {
			return err
		}
	}
	return nil
}

// partOf is what a message keeps of an attachment.
func (svc *Service) partOf(a *attachments.Attachment) history.Part {
	p := history.Part{ID: a.ID, Type: a.Type, Name: a.Name, Alt: a.Alt, Size: a.Size, Width: a.Width, Height: a.Height}
	if a.IsImage() {
		p.Tokens = attachments.ImageTokens(a.Width, a.Height, svc.imageDetail())
	} else {
		p.Tokens = svc.History.Tokens.Count("", &history.Message{Content: attachments.DocumentText(a)})
	}
	return p
}

func (svc *Service) imageDetail() string {
	if svc.ImageDetail != "" {
		return svc.ImageDetail
	}
	return DefaultImageDetail
}

// partContents reads what the model is sent of the attachments msgs
// carry (images not Omitted, documents), by id. An attachment deleted
// since its message was written is left out: the model gets its label.
func (svc *Service) partContents(ctx context.Context, userID string, msgs []history.Message) (map[string]PartContent, error) {
	var out map[string]PartContent
	for _, m := range msgs {
		for _, p := range m.Attachments {
			if _, done := out[p.ID]; done || p.Omitted || svc.Files == nil {
				continue
			}
			c, err := svc.partContent(ctx, userID, p)
			if errs.CodeOf(err) == errs.ENOTFOUND {
				continue
			}
			if err != nil {
				return nil, err
			}
			if out == nil {
				out = map[string]PartContent{}
			}
			out[p.ID] = c
		}
	}
	return out, nil
}

// partContent reads one attachment: an image's bytes, a document's text.
func (svc *Service) partContent(ctx context.Context, userID string, p history.Part) (PartContent, error) {
	if !p.IsImage() {
		a, err := svc.Files.Get(ctx, userID, p.ID)
		if err != nil {
			return PartContent{}, err
		}
		return PartContent{Text: attachments.DocumentText(a)}, nil
	}
	a, r, err := svc.Files.Open(ctx, userID, p.ID)
	if err != nil {
		return PartContent{}, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, a.Size))
	if err != nil {
		return PartContent{}, errs.Wrap(errs.EUNAVAILABLE, err, "an attachment could not be read; try again")
	}
	return PartContent{URL: "data:" + a.Type + ";base64," + base64.StdEncoding.EncodeToString(data)}, nil
}
