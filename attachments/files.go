package attachments

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"

	"github.com/chatmemory/backend/kernel/errs"
)

// List is the user's attachments' records, oldest first (never nil).
func (s *Service) List(ctx context.Context, userID string) ([]Attachment, error) {
	all, err := s.Repo.ListAttachments(ctx, userID)
	if all == nil && err == nil {
		all = []Attachment{}
	}
	return all, err
}

// Get is the user's attachment id; ENOTFOUND for anyone else's.
func (s *Service) Get(ctx context.Context, userID, id string) (*Attachment, error) {
	return s.Repo.GetAttachment(ctx, userID, id)
}

// Text is the text of the user's attachment id: a document's, as the
// model is sent it and search finds it ("" for an image).
func (s *Service) Text(ctx context.Context, userID, id string) (string, error) {
	a, err := s.Repo.GetAttachment(ctx, userID, id)
	if err != nil {
		return "", err
	}
	return a.Text, nil
}

// Open is the user's attachment id with its bytes; ENOTFOUND for anyone
// else's. The caller closes the reader.
func (s *Service) Open(ctx context.Context, userID, id string) (*Attachment, io.ReadCloser, error) {
	a, err := s.Repo.GetAttachment(ctx, userID, id)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.Blobs.Open(ctx, Key(userID, id))
	if err != nil {
		return nil, nil, err
	}
	return a, r, nil
}

// Delete removes the user's attachment: its object first, so that a
// record is never left without its bytes being gone too.
func (s *Service) Delete(ctx context.Context, userID, id string) error {
	if _, err := s.Repo.GetAttachment(ctx, userID, id); err != nil {
		return err
	}
	if err := s.Blobs.Delete(ctx, Key(userID, id)); err != nil {
		return err
	}
	_, err := s.Repo.DeleteAttachment(ctx, userID, id)
	return err
}

// StoredBytes is what the user's attachments take of their quota, and
// the quota.
func (s *Service) StoredBytes(ctx context.Context, userID string) (used, quota int64, err error) {
	used, err = s.Repo.StoredBytes(ctx, userID)
	return used, s.quota(), err
}

// ExportUser is the user's attachments as their export holds them: each
// record with its bytes (nil if none). The bytes are not read here: the
// export streams them (WriteJSON).
func (s *Service) ExportUser(ctx context.Context, userID string) (any, error) {
	all, err := s.Repo.ListAttachments(ctx, userID)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	return &Export{svc: s, userID: userID, all: all}, nil
}

// Export is a user's attachments in their export.
type Export struct {
	svc    *Service
	userID string
	all    []Attachment
}

// WriteJSON writes the attachments as a JSON array: each record (as GET
// /attachments answers it) with "data", its bytes in base64, streamed
// from the blob store a chunk at a time, never held whole; null for a
// record whose object is gone.
func (e *Export) WriteJSON(ctx context.Context, w io.Writer) error {
	if _, err := io.WriteString(w, "["); err != nil {
		return err
	}
	for i := range e.all {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if err := e.writeOne(ctx, w, &e.all[i]); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]")
	return err
}

// writeOne writes a's record, its url, and its bytes in base64.
func (e *Export) writeOne(ctx context.Context, w io.Writer, a *Attachment) error {
	rec, err := json.Marshal(a)
	if err != nil {
		return err
	}
	url, _ := json.Marshal(a.URL())
	head := string(rec[:len(rec)-1]) + `,"url":` + string(url) + `,"data":`
	body, err := e.svc.Blobs.Open(ctx, Key(e.userID, a.ID))
	if errs.CodeOf(err) == errs.ENOTFOUND {
		_, err = io.WriteString(w, head+"null}")
		return err
	}
	if err != nil {
		return err
	}
	defer body.Close()
	if _, err := io.WriteString(w, head+`"`); err != nil {
		return err
	}
	enc := base64.NewEncoder(base64.StdEncoding, w)
	if _, err := io.Copy(enc, body); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = io.WriteString(w, `"}`)
	return err
}

// EraseUser deletes the user's quota record first (the fence: an upload
// in flight then cannot write its record, and deletes its object itself),
// then every attachment of the user, object and record, then any object
// left under the user's prefix (one whose record was never written). An
// upload whose record was written before the fence is in the list read
// after it, and its object was written before its record: nothing it
// stored escapes. It returns how many records it deleted.
func (s *Service) EraseUser(ctx context.Context, userID string) (int, error) {
	if err := s.Repo.DeleteAttachmentQuota(ctx, userID); err != nil {
		return 0, err
	}
	all, err := s.Repo.ListAttachments(ctx, userID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, a := range all {
		if err := s.Blobs.Delete(ctx, Key(userID, a.ID)); err != nil {
			return n, err
		}
		ok, err := s.Repo.DeleteAttachment(ctx, userID, a.ID)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, s.deleteStrays(ctx, userID)
}

// deleteStrays deletes every object under the user's prefix.
func (s *Service) deleteStrays(ctx context.Context, userID string) error {
	keys, err := s.Blobs.List(ctx, Prefix(userID))
	if err != nil {
		return err
	}
	var failed []error
	for _, k := range keys {
		failed = append(failed, s.Blobs.Delete(ctx, k))
	}
	if err := errors.Join(failed...); err != nil {
		return errs.Wrap(errs.EUNAVAILABLE, err, "attachments could not be deleted")
	}
	return nil
}
