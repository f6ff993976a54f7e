package firestoredb

import (
	"context"
	"errors"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// Attachments' records and each user's stored bytes:
//
//	chat_attachments/{id}         an attachment's record, with its owner's userId
//	chat_attachment_quotas/{uid}  the user's stored bytes and this minute's uploads
const (
	AttachmentsCollection      = "chat_attachments"
	AttachmentQuotasCollection = "chat_attachment_quotas"
)

type attachmentDoc struct {
	UserID     string    `firestore:"userId"`
	SessionID  string    `firestore:"sessionId,omitempty"`
	Type       string    `firestore:"type"`
	Name       string    `firestore:"name"`
	Alt        string    `firestore:"alt,omitempty"`
	Size       int64     `firestore:"size"`
	Width      int       `firestore:"width,omitempty"`
	Height     int       `firestore:"height,omitempty"`
	SHA256     string    `firestore:"sha256"`
	CreatedAt  time.Time `firestore:"createdAt"`
	Referenced bool      `firestore:"referenced"`
	Text       string    `firestore:"text,omitempty"` // a document's, at most attachments.TextBytes
}

type quotaDoc struct {
	UserID  string `firestore:"userId"`
	Bytes   int64  `firestore:"bytes"`
	Minute  int64  `firestore:"minute"`
	Uploads int    `firestore:"uploads"`
	Token   string `firestore:"token,omitempty"` // of the last update
	// Generation is made when the record is (by the first reservation
	// after it was missing); an erasure deletes the record, so an upload
	// that reserved before the erasure finds another generation, or none.
	Generation string `firestore:"generation,omitempty"`
}

// ReserveAttachment reads the user's quota and writes it back on
// condition that it did not change meanwhile (optimistic: one read and
// one commit, no locks, so 20 uploads of a user at once retry rather than
// queue on a transaction). Each call marks the record with a token of its
// own, so after a commit whose answer was lost it finds its own write
// instead of reserving twice. It returns the record's generation.
func (db *DB) ReserveAttachment(ctx context.Context, userID string, r attachments.Reservation) (string, error) {
	return db.updateQuota(ctx, userID, true, func(q *quotaDoc) error {
		if q.Generation == "" { // a new record, or one older than generations
			q.Generation = ids.New()
		}
		if q.Minute != r.Minute() {
			q.Minute, q.Uploads = r.Minute(), 0
		}
		if err := attachments.Admit(q.Bytes, q.Uploads, r); err != nil {
			return err
		}
		q.Bytes, q.Uploads = q.Bytes+r.Bytes, q.Uploads+1
		return nil
	})
}

// errOtherGeneration stops an update of a quota record that is not of
// the generation asked for (or is missing).
var errOtherGeneration = errs.Errorf(errs.ECONFLICT, "the quota record is of another generation")

// ReleaseAttachment takes n bytes off the user's stored bytes, if the
// record is still of generation gen; it never creates the record.
func (db *DB) ReleaseAttachment(ctx context.Context, userID, gen string, n int64) error {
	_, err := db.updateQuota(ctx, userID, false, func(q *quotaDoc) error {
		if q.Generation != gen {
			return errOtherGeneration
		}
		q.Bytes = max(0, q.Bytes-n)
		return nil
	})
	if errors.Is(err, errOtherGeneration) {
		return nil
	}
	return err
}

// updateQuota applies fn to the user's quota record optimistically (a
// missing one, when create, as an empty record; else it stops with
// errOtherGeneration), and returns the record's generation.
func (db *DB) updateQuota(ctx context.Context, userID string, create bool, fn func(*quotaDoc) error) (string, error) {
	ref, token := db.quotaRef(userID), ids.New()
	var gen string
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		snaps, err := get([]*firestore.DocumentRef{ref})
		if err != nil {
			return nil, err
		}
		q, err := quotaOf(snaps[0])
		if err != nil {
			return nil, err
		}
		if gen = q.Generation; q.Token == token {
			return nil, nil // this call's own commit landed
		}
		if !snaps[0].Exists() && !create {
			return nil, errOtherGeneration
		}
		if err := fn(&q); err != nil {
			return nil, err
		}
		q.UserID, q.Token, gen = userID, token, q.Generation
		w := db.newWrites()
		if snaps[0].Exists() {
			w.Update(ref, []firestore.Update{{Path: "userId", Value: q.UserID}, {Path: "bytes", Value: q.Bytes},
				{Path: "minute", Value: q.Minute}, {Path: "uploads", Value: q.Uploads}, {Path: "token", Value: q.Token},
				{Path: "generation", Value: q.Generation}}, firestore.LastUpdateTime(snaps[0].UpdateTime))
		} else {
			w.Create(ref, q)
		}
		return w, nil
	})
	return gen, err
}

// StoredBytes is the user's stored bytes.
func (db *DB) StoredBytes(ctx context.Context, userID string) (int64, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snap, err := db.quotaRef(userID).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return 0, nil
	}
	if err != nil {
		return 0, translate(err)
	}
	var q quotaDoc
	if err := snap.DataTo(&q); err != nil {
		return 0, translate(err)
	}
	return q.Bytes, nil
}

// CreateAttachment creates the record and gives back what its upload
// did not use, in one commit conditioned on the quota record read (a
// read and a commit): the fence against an erasure, which deletes the
// quota record first. The quota record's token tells a commit whose
// answer was lost.
func (db *DB) CreateAttachment(ctx context.Context, a *attachments.Attachment, gen string, unused int64) error {
	ref, qref, token := db.attachmentRef(a.ID), db.quotaRef(a.UserID), ids.New()
	_, err := db.optimistic(ctx, func(ctx context.Context, get getAll) (*writes, error) {
		snaps, err := get([]*firestore.DocumentRef{qref, ref})
		if err != nil {
			return nil, err
		}
		q, err := quotaOf(snaps[0])
		switch {
		case err != nil:
			return nil, err
		case q.Token == token:
			return nil, nil // this call's own commit landed
		case !snaps[0].Exists() || q.Generation != gen:
			return nil, attachments.Erased()
		case snaps[1].Exists():
			return nil, errs.Errorf(errs.ECONFLICT, "attachment %s exists", a.ID)
		}
		w := db.newWrites()
		w.Update(qref, []firestore.Update{{Path: "bytes", Value: max(0, q.Bytes-unused)}, {Path: "token", Value: token}},
			firestore.LastUpdateTime(snaps[0].UpdateTime))
		w.Create(ref, toAttachmentDoc(a))
		return w, nil
	})
	return err
}

// GetAttachment reads the record; another user's is not found.
func (db *DB) GetAttachment(ctx context.Context, userID, id string) (*attachments.Attachment, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snap, err := db.attachmentRef(id).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return nil, errs.Errorf(errs.ENOTFOUND, "no such attachment")
	}
	if err != nil {
		return nil, translate(err)
	}
	a, err := fromAttachmentSnap(snap)
	if err != nil {
		return nil, err
	}
	if a.UserID != userID {
		return nil, errs.Errorf(errs.ENOTFOUND, "no such attachment")
	}
	return a, nil
}

// ListAttachments queries the user's records, oldest first.
func (db *DB) ListAttachments(ctx context.Context, userID string) ([]attachments.Attachment, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.client.Collection(AttachmentsCollection).Where("userId", "==", userID).Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	all := make([]attachments.Attachment, 0, len(snaps))
	for _, s := range snaps {
		a, err := fromAttachmentSnap(s)
		if err != nil {
			return nil, err
		}
		all = append(all, *a)
	}
	attachments.SortAttachments(all)
	return all, nil
}

// DeleteAttachment deletes the record and takes its size off the quota
// in one transaction.
func (db *DB) DeleteAttachment(ctx context.Context, userID, id string) (bool, error) {
	ref, qref := db.attachmentRef(id), db.quotaRef(userID)
	deleted := false
	err := db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		deleted = false
		snap, err := tx.Get(ref)
		if status.Code(err) == codes.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		a, err := fromAttachmentSnap(snap)
		if err != nil || a.UserID != userID {
			return err
		}
		if err := releaseIn(tx, qref, a.Size); err != nil {
			return err
		}
		deleted = true
		return tx.Delete(ref)
	})
	return deleted, err
}

// ReferenceAttachment marks the record referenced by a message of
// sessionID, in one transaction (a read and a write) that checks its
// owner.
func (db *DB) ReferenceAttachment(ctx context.Context, userID, id, sessionID string) error {
	ref := db.attachmentRef(id)
	return db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		snap, err := tx.Get(ref)
		if status.Code(err) == codes.NotFound {
			return errs.Errorf(errs.ENOTFOUND, "no such attachment")
		}
		if err != nil {
			return err
		}
		a, err := fromAttachmentSnap(snap)
		if err != nil {
			return err
		}
		if a.UserID != userID {
			return errs.Errorf(errs.ENOTFOUND, "no such attachment")
		}
		if a.Referenced && a.SessionID == sessionID {
			return nil
		}
		return tx.Update(ref, []firestore.Update{{Path: "referenced", Value: true}, {Path: "sessionId", Value: sessionID}})
	})
}

// UnreferencedAttachments queries unreferenced records uploaded before
// before, oldest first (the composite index on referenced, createdAt).
func (db *DB) UnreferencedAttachments(ctx context.Context, before time.Time, limit int) ([]attachments.Attachment, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.client.Collection(AttachmentsCollection).Where("referenced", "==", false).Where("createdAt", "<", before).
		OrderBy("createdAt", firestore.Asc).Limit(limit).Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	out := make([]attachments.Attachment, 0, len(snaps))
	for _, s := range snaps {
		a, err := fromAttachmentSnap(s)
		if err != nil {
			return nil, err
		}
		out = append(out, *a)
	}
	return out, nil
}

// DeleteAttachmentQuota deletes the user's quota record.
func (db *DB) DeleteAttachmentQuota(ctx context.Context, userID string) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	_, err := db.quotaRef(userID).Delete(ctx)
	return translate(err)
}

func toAttachmentDoc(a *attachments.Attachment) attachmentDoc {
	return attachmentDoc{UserID: a.UserID, SessionID: a.SessionID, Type: a.Type, Name: a.Name, Alt: a.Alt,
		Size: a.Size, Width: a.Width, Height: a.Height, SHA256: a.SHA256, CreatedAt: a.CreatedAt, Referenced: a.Referenced,
		Text: a.Text}
}

func fromAttachmentSnap(snap *firestore.DocumentSnapshot) (*attachments.Attachment, error) {
	var d attachmentDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, translate(err)
	}
	return &attachments.Attachment{ID: snap.Ref.ID, UserID: d.UserID, SessionID: d.SessionID, Type: d.Type, Name: d.Name,
		Alt: d.Alt, Size: d.Size, Width: d.Width, Height: d.Height, SHA256: d.SHA256, CreatedAt: d.CreatedAt, Referenced: d.Referenced,
		Text: d.Text}, nil
}

// quotaOf is the quota record snap holds (empty if it does not exist).
func quotaOf(snap *firestore.DocumentSnapshot) (quotaDoc, error) {
	var q quotaDoc
	if snap.Exists() {
		if err := snap.DataTo(&q); err != nil {
			return q, err
		}
	}
	return q, nil
}

// releaseIn takes n bytes off the quota at ref within tx (no record: nothing).
func releaseIn(tx *firestore.Transaction, ref *firestore.DocumentRef, n int64) error {
	snap, err := tx.Get(ref)
	if status.Code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	var q quotaDoc
	if err := snap.DataTo(&q); err != nil {
		return err
	}
	return tx.Update(ref, []firestore.Update{{Path: "bytes", Value: max(0, q.Bytes-n)}, {Path: "token", Value: ids.New()}})
}

func (db *DB) attachmentRef(id string) *firestore.DocumentRef {
	return db.client.Collection(AttachmentsCollection).Doc(id)
}

func (db *DB) quotaRef(userID string) *firestore.DocumentRef {
	return db.client.Collection(AttachmentQuotasCollection).Doc(UserDocID(userID))
}
