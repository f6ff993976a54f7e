package functions

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/kernel/errs"
)

// uploadOverhead is what a multipart form may add to its file: the
// boundaries, headers and the alt field.
const uploadOverhead = 64 << 10

// uploadAttachment answers POST /attachments: a multipart/form-data body
// with one file part named "file" and, optionally, an "alt" field (an
// image's description), in either order. The file is streamed to storage
// as it arrives; the answer (201) is its record: id, type, size, and an
// image's width and height.
func (a *App) uploadAttachment(w http.ResponseWriter, r *http.Request) {
	mr, err := r.MultipartReader()
	if err != nil {
		a.writeError(w, r, errs.Errorf(errs.EINVALID, "body: a multipart/form-data upload with a \"file\" field is expected"))
		return
	}
	form := &uploadForm{mr: mr}
	att, err := form.upload(r, a.Attachments)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", att.URL())
	writeJSON(w, http.StatusCreated, attachmentJSON(att))
}

// uploadForm reads an upload's parts in their order.
type uploadForm struct {
	mr     *multipart.Reader
	alt    string
	stored *attachments.Attachment
}

// upload reads fields up to the file, streams the file, then reads the
// fields after it before the record is written.
func (f *uploadForm) upload(r *http.Request, svc Attachments) (*attachments.Attachment, error) {
	for {
		part, err := f.mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, errs.Errorf(errs.EINVALID, "file: the form has no \"file\" field")
		}
		if err != nil {
			return nil, errs.Wrap(errs.EINVALID, err, "body: the multipart form could not be read")
		}
		if part.FormName() != "file" {
			if err := f.field(part); err != nil {
				return nil, err
			}
			continue
		}
		up := attachments.Upload{Name: part.FileName(), Declared: part.Header.Get("Content-Type"), Body: part,
			SizeHint: r.ContentLength, Alt: f.alt, Then: f.rest}
		return svc.Upload(r.Context(), UserID(r.Context()), up)
	}
}

// rest reads the fields after the file into a.
func (f *uploadForm) rest(a *attachments.Attachment) error {
	for {
		part, err := f.mr.NextPart()
		if errors.Is(err, io.EOF) {
			a.Alt = f.alt
			return attachments.CheckAlt(a.Alt)
		}
		if err != nil {
			return errs.Wrap(errs.EINVALID, err, "body: the multipart form could not be read")
		}
		if part.FormName() == "file" {
			return errs.Errorf(errs.EINVALID, "file: one file per upload")
		}
		if err := f.field(part); err != nil {
			return err
		}
	}
}

// field reads a form field that is not the file.
func (f *uploadForm) field(part *multipart.Part) error {
	if part.FormName() != "alt" {
		return errs.Errorf(errs.EINVALID, "%s: unknown field (the form takes \"file\" and \"alt\")", part.FormName())
	}
	b, err := io.ReadAll(io.LimitReader(part, 4*attachments.MaxAltChars+1))
	if err != nil {
		return errs.Wrap(errs.EINVALID, err, "alt: it could not be read")
	}
	f.alt = string(b)
	return attachments.CheckAlt(f.alt)
}

// getAttachment answers GET /attachments/{id} with the file, to its owner
// only (anyone else gets 404). Images are shown in place; everything else
// is a download, and nothing is sniffed or run by the browser.
func (a *App) getAttachment(w http.ResponseWriter, r *http.Request) {
	att, body, err := a.Attachments.Open(r.Context(), UserID(r.Context()), r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	defer body.Close()
	h := w.Header()
	h.Set("Content-Type", contentType(att))
	h.Set("Content-Length", strconv.FormatInt(att.Size, 10))
	h.Set("Content-Disposition", disposition(att))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, max-age=86400")
	h.Set("ETag", `"`+att.SHA256+`"`)
	if r.Header.Get("If-None-Match") == `"`+att.SHA256+`"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	io.Copy(w, body)
}

func contentType(att *attachments.Attachment) string {
	if attachments.Types[att.Type].Text {
		return att.Type + "; charset=utf-8"
	}
	return att.Type
}

// disposition shows images in place and makes everything else a download.
func disposition(att *attachments.Attachment) string {
	kind := "attachment"
	if attachments.Types[att.Type].Inline {
		kind = "inline"
	}
	if d := mime.FormatMediaType(kind, map[string]string{"filename": att.Name}); d != "" {
		return d
	}
	return kind
}

// listAttachments answers GET /attachments: the caller's attachments'
// records, oldest first.
func (a *App) listAttachments(w http.ResponseWriter, r *http.Request) {
	all, err := a.Attachments.List(r.Context(), UserID(r.Context()))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := make([]attachmentOut, len(all))
	for i := range all {
		out[i] = attachmentJSON(&all[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"attachments": out})
}

// deleteAttachment answers DELETE /attachments/{id} with 204; its bytes
// leave the caller's quota.
func (a *App) deleteAttachment(w http.ResponseWriter, r *http.Request) {
	if err := a.Attachments.Delete(r.Context(), UserID(r.Context()), r.PathValue("id")); err != nil {
		a.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// withFiles answers 404 for h while there is no file storage.
func (a *App) withFiles(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.Attachments == nil {
			a.writeError(w, r, errs.Errorf(errs.ENOTFOUND, "attachments are not enabled on this server"))
			return
		}
		h(w, r)
	}
}

// isUpload reports whether r is an upload, whose body may be as large as
// a file.
func (a *App) isUpload(r *http.Request) bool {
	return a.Attachments != nil && r.Method == http.MethodPost && strings.TrimSuffix(r.URL.Path, "/") == "/attachments"
}
