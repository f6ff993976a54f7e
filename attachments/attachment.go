// Package attachments keeps the files users attach to their messages:
// images (PNG, JPEG, WebP, GIF) and documents (PDF, plain text, Markdown,
// CSV, JSON, source code). The bytes live in a blob store (Cloud Storage
// in production, objects users/{uid}/attachments/{id} that only the server
// reads and writes); what is known of each file (its owner, type, size,
// dimensions, digest) lives in the store beside the sessions. An upload is
// streamed: its type is read from its first bytes, its size and SHA-256
// counted while it is written, and a file that fails a check is deleted
// before anyone can name it.
package attachments

import (
	"context"
	"io"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chatmemory/backend/kernel/errs"
)

// Attachment is what is known of one stored file.
type Attachment struct {
	ID        string    `json:"id"`
	UserID    string    `json:"-"`
	SessionID string    `json:"sessionId,omitempty"`
	Type      string    `json:"type"` // a MIME type, read from the bytes
	Name      string    `json:"name"`
	Alt       string    `json:"alt,omitempty"`
	Size      int64     `json:"size"`
	Width     int       `json:"width,omitempty"` // images only
	Height    int       `json:"height,omitempty"`
	SHA256    string    `json:"sha256"` // hex
	CreatedAt time.Time `json:"createdAt"`
	// Referenced is set once a message names the attachment; one that no
	// message names a day after its upload is swept.
	Referenced bool `json:"referenced"`
	// Text is a document's text as the model is sent it and search finds
	// it (at most TextBytes; PDF: the text of its pages); images have none.
	Text string `json:"-"`
}

// URL is where the attachment's owner downloads it, and how a message
// of the AI SDK (a FileUIPart's url) names it.
func (a *Attachment) URL() string { return "/attachments/" + a.ID }

// IsImage reports whether a is an image the model can look at.
func (a *Attachment) IsImage() bool { return Types[a.Type].Image }

// Key is the name of a user's attachment in the blob store.
func Key(userID, id string) string {
	return Prefix(userID) + id
}

// Prefix is where a user's attachments are kept in the blob store.
func Prefix(userID string) string {
	return "users/" + url.PathEscape(userID) + "/attachments/"
}

// Blobs is where the bytes of attachments are kept.
type Blobs interface {
	// Write streams r into the object key and returns how many bytes it
	// wrote. When it fails (r failed, or the store did), no object is
	// left under key.
	Write(ctx context.Context, key, contentType string, r io.Reader) (int64, error)
	// Open reads the object key; ENOTFOUND when there is none.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes the object key; an absent one is no error.
	Delete(ctx context.Context, key string) error
	// List names the objects under prefix, in name order.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Reservation asks for room for one upload at At: Bytes more stored
// bytes, within Quota, and one more upload in At's calendar minute,
// within PerMinute (0: no limit).
type Reservation struct {
	Bytes     int64
	Quota     int64
	At        time.Time
	PerMinute int
}

// Minute is the reservation's calendar minute, in unix minutes.
func (r Reservation) Minute() int64 { return r.At.Unix() / 60 }

// Repo keeps what is known of attachments and each user's stored bytes.
type Repo interface {
	// ReserveAttachment adds r.Bytes to the user's stored bytes and counts
	// an upload in r.Minute, atomically, or refuses with EQUOTA (the bytes
	// would pass r.Quota) or ERATELIMITED (the minute is full), changing
	// nothing. It returns the generation of the user's quota record that
	// counted the bytes: a new one when the record is created, the same
	// while it lives. An erasure deletes the record first, so a generation
	// outlived by an erasure is never current again: the fence of
	// CreateAttachment and ReleaseAttachment.
	ReserveAttachment(ctx context.Context, userID string, r Reservation) (gen string, err error)
	// ReleaseAttachment takes n bytes off the user's stored bytes (never
	// below zero) if the user's quota record is still of generation gen;
	// otherwise (an erasure deleted it) it changes nothing and creates
	// nothing.
	ReleaseAttachment(ctx context.Context, userID, gen string, n int64) error
	// StoredBytes is the user's stored bytes, reserved ones included.
	StoredBytes(ctx context.Context, userID string) (int64, error)
	// CreateAttachment stores a new attachment's record and takes unused
	// (what its upload reserved and did not use) off the user's stored
	// bytes, atomically, if the user's quota record is still of
	// generation gen; otherwise (an erasure began since the bytes were
	// reserved) it writes nothing and answers Erased(). ECONFLICT when a
	// record of a.ID exists.
	CreateAttachment(ctx context.Context, a *Attachment, gen string, unused int64) error
	// GetAttachment reads the user's attachment id; ENOTFOUND when there
	// is none or it is another user's.
	GetAttachment(ctx context.Context, userID, id string) (*Attachment, error)
	// ListAttachments is every attachment of the user, oldest first.
	ListAttachments(ctx context.Context, userID string) ([]Attachment, error)
	// DeleteAttachment removes the record and takes its size off the
	// user's stored bytes, atomically; false when there was none.
	DeleteAttachment(ctx context.Context, userID, id string) (bool, error)
	// ReferenceAttachment records that a message of session sessionID
	// names the user's attachment id: it is Referenced (the unreferenced
	// sweep leaves it) and belongs to that session (its purge deletes it).
	// ENOTFOUND when there is none or it is another user's.
	ReferenceAttachment(ctx context.Context, userID, id, sessionID string) error
	// UnreferencedAttachments is up to limit attachments of any user that
	// no message named and that were uploaded before before, oldest first.
	UnreferencedAttachments(ctx context.Context, before time.Time, limit int) ([]Attachment, error)
	// DeleteAttachmentQuota removes the user's stored-bytes record: the
	// first step of an erasure, which fences out every upload in flight.
	DeleteAttachmentQuota(ctx context.Context, userID string) error
}

// Erased is what CreateAttachment answers for an upload that an erasure
// of its user overtook: nothing of it is kept.
func Erased() error {
	return errs.Errorf(errs.ECONFLICT, "file: not kept: your data was erased while it was being uploaded")
}

// Admit checks a reservation against a user's stored bytes and the
// uploads counted in r.Minute (the stores call it inside their atomic
// update).
func Admit(stored int64, uploads int, r Reservation) error {
	if r.PerMinute > 0 && uploads >= r.PerMinute {
		e := errs.Errorf(errs.ERATELIMITED, "limit of %d uploads per minute reached", r.PerMinute)
		e.RetryAfter = max(time.Second, time.Unix((r.Minute()+1)*60, 0).Sub(r.At).Round(time.Second))
		return e
	}
	if stored+r.Bytes > r.Quota {
		return errs.Errorf(errs.EQUOTA, "file: it does not fit in your storage quota (%d of %d bytes used; this upload reserves %d)", stored, r.Quota, r.Bytes)
	}
	return nil
}

// SortAttachments orders attachments oldest first (ids break ties).
func SortAttachments(all []Attachment) {
	slices.SortFunc(all, func(a, b Attachment) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// ImageTokens is what an image of w×h pixels costs in a prompt by
// OpenAI's formula: "low" detail a flat 85; otherwise the image is scaled
// to fit 2048×2048, then its shorter side to at most 768, and each 512-px
// tile costs 170 more than the base 85.
func ImageTokens(w, h int, detail string) int {
	if detail == "low" || w <= 0 || h <= 0 {
		return 85
	}
	fw, fh := float64(w), float64(h)
	if s := 2048 / max(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	if s := 768 / min(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	tiles := int(math.Ceil(fw/512)) * int(math.Ceil(fh/512))
	return 85 + 170*tiles
}
