package inprocdb

import (
	"context"
	"time"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// files are the attachments' records and each user's stored bytes.
type files struct {
	byID   map[string]attachments.Attachment
	quotas map[string]*quota // by user
}

type quota struct {
	gen     string // made when the record is; an erasure deletes the record
	bytes   int64
	minute  int64
	uploads int
}

// ReserveAttachment counts an upload and its bytes, or refuses it, and
// returns the quota record's generation.
func (db *DB) ReserveAttachment(_ context.Context, userID string, r attachments.Reservation) (string, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	q := db.files().quotas[userID]
	if q == nil {
		q = &quota{gen: ids.New()}
	}
	next := *q
	if next.minute != r.Minute() {
		next.minute, next.uploads = r.Minute(), 0
	}
	if err := attachments.Admit(next.bytes, next.uploads, r); err != nil {
		return "", err
	}
	next.bytes += r.Bytes
	next.uploads++
	db.files().quotas[userID] = &next
	return next.gen, nil
}

// ReleaseAttachment takes n bytes off the user's stored bytes, if the
// quota record is still of generation gen.
func (db *DB) ReleaseAttachment(_ context.Context, userID, gen string, n int64) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if q := db.files().quotas[userID]; q != nil && q.gen == gen {
		q.bytes = max(0, q.bytes-n)
	}
	return nil
}

// StoredBytes is the user's stored bytes.
func (db *DB) StoredBytes(_ context.Context, userID string) (int64, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if q := db.files().quotas[userID]; q != nil {
		return q.bytes, nil
	}
	return 0, nil
}

// CreateAttachment keeps a new attachment's record and gives back what
// its upload did not use, if the quota record is still of generation gen.
func (db *DB) CreateAttachment(_ context.Context, a *attachments.Attachment, gen string, unused int64) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	q := db.files().quotas[a.UserID]
	if q == nil || q.gen != gen {
		return attachments.Erased()
	}
	if _, ok := db.files().byID[a.ID]; ok {
		return errs.Errorf(errs.ECONFLICT, "attachment %s exists", a.ID)
	}
	db.files().byID[a.ID] = *a
	q.bytes = max(0, q.bytes-unused)
	return nil
}

// GetAttachment reads the user's attachment id.
func (db *DB) GetAttachment(_ context.Context, userID, id string) (*attachments.Attachment, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	a, ok := db.files().byID[id]
	if !ok || a.UserID != userID {
		return nil, errs.Errorf(errs.ENOTFOUND, "no such attachment")
	}
	return &a, nil
}

// ListAttachments is every attachment of the user, oldest first.
func (db *DB) ListAttachments(_ context.Context, userID string) ([]attachments.Attachment, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var all []attachments.Attachment
	for _, a := range db.files().byID {
		if a.UserID == userID {
			all = append(all, a)
		}
	}
	attachments.SortAttachments(all)
	return all, nil
}

// DeleteAttachment removes the record and its bytes from the quota.
func (db *DB) DeleteAttachment(_ context.Context, userID, id string) (bool, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	f := db.files()
	a, ok := f.byID[id]
	if !ok || a.UserID != userID {
		return false, nil
	}
	delete(f.byID, id)
	if q := f.quotas[userID]; q != nil {
		q.bytes = max(0, q.bytes-a.Size)
	}
	return true, nil
}

// ReferenceAttachment marks the user's attachment named by a message of
// sessionID.
func (db *DB) ReferenceAttachment(_ context.Context, userID, id, sessionID string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	a, ok := db.files().byID[id]
	if !ok || a.UserID != userID {
		return errs.Errorf(errs.ENOTFOUND, "no such attachment")
	}
	a.Referenced, a.SessionID = true, sessionID
	db.files().byID[id] = a
	return nil
}

// UnreferencedAttachments is up to limit unreferenced attachments
// uploaded before before, oldest first.
func (db *DB) UnreferencedAttachments(_ context.Context, before time.Time, limit int) ([]attachments.Attachment, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var all []attachments.Attachment
	for _, a := range db.files().byID {
		if !a.Referenced && a.CreatedAt.Before(before) {
			all = append(all, a)
		}
	}
	attachments.SortAttachments(all)
	return all[:min(limit, len(all))], nil
}

// DeleteAttachmentQuota forgets the user's stored bytes.
func (db *DB) DeleteAttachmentQuota(_ context.Context, userID string) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	delete(db.files().quotas, userID)
	return nil
}

func (db *DB) files() *files {
	if db.attach == nil {
		db.attach = &files{byID: map[string]attachments.Attachment{}, quotas: map[string]*quota{}}
	}
	return db.attach
}
