package attachments

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/kernel/ids"
)

// Defaults of the limits.
const (
	DefaultMaxBytes  = 20 << 20 // one file
	DefaultQuota     = 1 << 30  // a user's stored bytes
	DefaultPerMinute = 20       // uploads per user per minute
	maxNameBytes     = 255
	MaxAltChars      = 1000
	headSniff        = 512
)

// Service takes uploads, answers downloads and deletes attachments.
type Service struct {
	Repo      Repo
	Blobs     Blobs
	MaxBytes  int64 // one file; 0: DefaultMaxBytes
	Quota     int64 // a user's stored bytes; 0: DefaultQuota
	PerMinute int   // uploads per user in a calendar minute; 0: no limit
	Now       func() time.Time
	Log       *slog.Logger
}

// Upload is one file as it arrives.
type Upload struct {
	Name     string // as the client named it; only its last element is kept
	Alt      string // an image's description, if given
	Declared string // the client's Content-Type for it, if any
	Body     io.Reader
	// SizeHint bounds the bytes Body holds (a request's Content-Length);
	// 0: unknown. That many bytes (at most MaxBytes) are reserved of the
	// quota while the file is written, the rest given back after.
	SizeHint int64
	// Then, if set, runs once the bytes are stored and checked, before the
	// record is written (a form's fields after its file are read there);
	// an error of it stores nothing.
	Then func(a *Attachment) error
}

// Upload stores one file of userID: it reads the type from the first
// bytes, reserves room in the user's quota, streams the bytes to the blob
// store while counting, hashing and checking them, and writes the record.
// A file refused at any step leaves nothing stored and nothing reserved.
func (s *Service) Upload(ctx context.Context, userID string, up Upload) (*Attachment, error) {
	a, err := s.describe(userID, up)
	if err != nil {
		return nil, err
	}
	in := bufio.NewReaderSize(up.Body, headSniff)
	head, err := in.Peek(headSniff)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, readFailed(err)
	}
	if len(head) == 0 {
		return nil, errs.Errorf(errs.EINVALID, "file: it is empty")
	}
	t, err := Sniff(head, a.Name, up.Declared)
	if err != nil {
		return nil, err
	}
	a.Type = t.MIME
	reserved := s.reservation(up.SizeHint)
	gen, err := s.Repo.ReserveAttachment(ctx, userID, Reservation{Bytes: reserved, Quota: s.quota(), At: a.CreatedAt, PerMinute: s.PerMinute})
	if err != nil {
		return nil, err
	}
	if err := s.store(ctx, a, t, &capped{r: in, left: reserved, reserved: reserved}, up.Then, gen); err != nil {
		s.release(ctx, userID, gen, reserved)
		return nil, err
	}
	return a, nil
}

// describe is the record of an upload before its bytes are seen.
func (s *Service) describe(userID string, up Upload) (*Attachment, error) {
	name, err := cleanName(up.Name)
	if err != nil {
		return nil, err
	}
	if err := CheckAlt(up.Alt); err != nil {
		return nil, err
	}
	return &Attachment{ID: ids.New(), UserID: userID, Name: name, Alt: up.Alt, CreatedAt: s.now()}, nil
}

// reservation is what an upload of at most hint bytes reserves.
func (s *Service) reservation(hint int64) int64 {
	if hint > 0 && hint < s.MaxFile() {
		return hint
	}
	return s.MaxFile()
}

// store writes the bytes (no more than limited lets through) and the
// record, which gives back what the upload reserved of quota generation
// gen and did not use; whatever fails deletes the object again. The
// record's commit is the fence against an erasure: one that began after
// the reservation deleted the quota record first, so the commit is
// refused and the object deleted here, whether the erasure's listing of
// the user's objects came before the write or after it.
func (s *Service) store(ctx context.Context, a *Attachment, t Type, limited *capped, then func(*Attachment) error, gen string) error {
	key := Key(a.UserID, a.ID)
	check := newChecker(t)
	_, err := s.Blobs.Write(ctx, key, t.MIME, io.TeeReader(limited, check))
	if err == nil {
		err = check.verdict(a)
	}
	if err == nil && t.MIME == "application/pdf" {
		a.Text, err = s.pdfText(ctx, key, a.Size)
	}
	if err == nil && then != nil {
		err = then(a)
	}
	if err == nil {
		err = s.Repo.CreateAttachment(ctx, a, gen, limited.reserved-a.Size)
	}
	if err != nil {
		s.deleteObject(ctx, key)
		if limited.over {
			return errs.Errorf(errs.ETOOLARGE, "file: it is larger than the %d bytes taken", s.MaxFile())
		}
		return readFailed(err)
	}
	return nil
}

// capped reads at most left bytes of r, and fails past them.
type capped struct {
	r        io.Reader
	left     int64
	over     bool
	reserved int64 // left at the start: what the upload reserved
}

var errTooLarge = errors.New("file too large")

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		c.over = true
		return 0, errTooLarge
	}
	return n, err
}

// readFailed keeps errors of ours and names a body that could not be read.
func readFailed(err error) error {
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errs.Wrap(errs.EUNAVAILABLE, err, "the upload was cut off")
	}
	return errs.Wrap(errs.EINVALID, err, "file: the upload could not be read to its end")
}

// release gives back n bytes reserved in quota generation gen; a
// failure only leaves the quota counting more than is stored, which is
// logged.
func (s *Service) release(ctx context.Context, userID, gen string, n int64) {
	if n <= 0 {
		return
	}
	if err := s.Repo.ReleaseAttachment(context.WithoutCancel(ctx), userID, gen, n); err != nil && s.Log != nil {
		s.Log.ErrorContext(ctx, "attachments: reserved bytes not given back", "error", err.Error(), "bytes", n)
	}
}

func (s *Service) deleteObject(ctx context.Context, key string) {
	if err := s.Blobs.Delete(context.WithoutCancel(ctx), key); err != nil && s.Log != nil {
		s.Log.ErrorContext(ctx, "attachments: refused upload's object not deleted", "error", err.Error(), "key", key)
	}
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// cleanName is the last element of a client's file name, or "file".
func cleanName(name string) (string, error) {
	if !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		return "", errs.Errorf(errs.EINVALID, "name: it holds control characters or is not UTF-8")
	}
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if name == "." || name == "/" || name == "" {
		name = "file"
	}
	if len(name) > maxNameBytes {
		return "", errs.Errorf(errs.EINVALID, "name: it is longer than %d bytes", maxNameBytes)
	}
	return name, nil
}

// CheckAlt checks an image's description.
func CheckAlt(alt string) error {
	if !utf8.ValidString(alt) || strings.ContainsRune(alt, 0) {
		return errs.Errorf(errs.EINVALID, "alt: it is not UTF-8 text")
	}
	if utf8.RuneCountInString(alt) > MaxAltChars {
		return errs.Errorf(errs.EINVALID, "alt: it is longer than %d characters", MaxAltChars)
	}
	return nil
}

// MaxFile is the largest file taken.
func (s *Service) MaxFile() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return DefaultMaxBytes
}

func (s *Service) quota() int64 {
	if s.Quota > 0 {
		return s.Quota
	}
	return DefaultQuota
}
