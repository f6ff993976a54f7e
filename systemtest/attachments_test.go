package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/attachments"
)

// upload posts one file as a browser's FormData does (alt, if given,
// after the file) and returns the response.
func (h *harness) upload(token, name, contentType string, data []byte, alt string) response {
	h.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	hdr := map[string][]string{"Content-Disposition": {`form-data; name="file"; filename="` + name + `"`}}
	if contentType != "" {
		hdr["Content-Type"] = []string{contentType}
	}
	part, _ := mw.CreatePart(hdr)
	part.Write(data)
	if alt != "" {
		mw.WriteField("alt", alt)
	}
	mw.Close()
	h.sent.Add(1)
	return doRequest(h.t, h.srv.URL, "POST", "/attachments", token, body.String(), map[string]string{"Content-Type": mw.FormDataContentType()})
}

// download reads GET /attachments/{id} as is (binary: not checked
// against the JSON description).
func (h *harness) download(token, id string) (*http.Response, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest("GET", h.srv.URL+"/attachments/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	h.sent.Add(1)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, data
}

// objects names the server's objects under users/.
func (h *harness) objects() []string {
	h.t.Helper()
	keys, err := h.blobs.List(context.Background(), "users/")
	if err != nil {
		h.t.Fatal(err)
	}
	return keys
}

func testPNG(w, h int) []byte {
	var b bytes.Buffer
	png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)))
	return b.Bytes()
}

const testPDF = "%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"

// TestAttachments: a PNG and a PDF go up and come back to their owner
// only, with safe headers; every bad upload is a named 4xx that stores
// nothing; /usage and the export show them; erasure leaves no object.
func TestAttachments(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		h := newHarnessOn(t, backend)
		alice, bob := h.signUp(), h.signUp()
		pic := testPNG(4, 3)
		var img attachments.Attachment
		h.upload(alice.token, "cat.png", "image/png", pic, "a grey cat").want(t, 201).decode(t, &img)
		if img.Type != "image/png" || img.Width != 4 || img.Height != 3 || img.Size != int64(len(pic)) || img.Alt != "a grey cat" || img.Name != "cat.png" {
			t.Fatalf("image record %+v", img)
		}
		var doc attachments.Attachment
		h.upload(alice.token, "report.pdf", "", []byte(testPDF), "").want(t, 201).decode(t, &doc)

		resp, got := h.download(alice.token, img.ID)
		if resp.StatusCode != 200 || !bytes.Equal(got, pic) || resp.Header.Get("Content-Type") != "image/png" ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "inline") {
			t.Fatalf("owner's download: %d %v (%d bytes)", resp.StatusCode, resp.Header, len(got))
		}
		resp, got = h.download(alice.token, doc.ID)
		if resp.StatusCode != 200 || string(got) != testPDF || resp.Header.Get("Content-Disposition") != `attachment; filename=report.pdf` {
			t.Fatalf("PDF download: %d %v", resp.StatusCode, resp.Header)
		}
		if resp, _ := h.download(bob.token, img.ID); resp.StatusCode != 404 {
			t.Fatalf("bob's download of alice's image: %d, want 404", resp.StatusCode)
		}
		h.do("DELETE", "/attachments/"+img.ID, bob.token, nil).want(t, 404)

		for _, c := range []struct {
			name, ct, data string
			status         int
			code, says     string
		}{
			{"x.svg", "image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"/>`, 415, "unsupported_type", "SVG"},
			{"page.html", "", "<html><script>alert(1)</script></html>", 415, "unsupported_type", "HTML"},
			{"empty.txt", "", "", 400, "invalid_argument", "empty"},
			{"cat.png", "", testPDF, 415, "unsupported_type", "its name says PNG image"},
			{"a.out", "", "\x7fELF\x02\x01\x01", 415, "unsupported_type", "executable"},
		} {
			r := h.upload(alice.token, c.name, c.ct, []byte(c.data), "").want(t, c.status)
			var e errorResp
			r.decode(t, &e)
			if e.Error.Code != c.code || !strings.Contains(e.Error.Message, c.says) {
				t.Errorf("%s: %s %q; want %s saying %q", c.name, e.Error.Code, e.Error.Message, c.code, c.says)
			}
		}
		if keys := h.objects(); len(keys) != 2 {
			t.Fatalf("objects after the refused uploads: %v, want the 2 taken", keys)
		}

		var usage struct {
			Attachments struct{ StoredBytes, QuotaBytes int64 } `json:"attachments"`
		}
		h.do("GET", "/usage", alice.token, nil).want(t, 200).decode(t, &usage)
		if want := img.Size + doc.Size; usage.Attachments.StoredBytes != want || usage.Attachments.QuotaBytes != attachments.DefaultQuota {
			t.Fatalf("usage %+v, want %d stored", usage.Attachments, want)
		}
		var export map[string]json.RawMessage
		h.do("GET", "/account/export", alice.token, nil).want(t, 200).decode(t, &export)
		if !strings.Contains(string(export["attachments"]), img.ID) || !strings.Contains(string(export["attachments"]), doc.ID) {
			t.Fatalf("the export's attachments: %s", export["attachments"])
		}

		h.do("DELETE", "/account/data", alice.token, nil).want(t, 200)
		if keys := h.objects(); len(keys) != 0 {
			t.Fatalf("objects after erasure: %v", keys)
		}
		if resp, _ := h.download(alice.token, doc.ID); resp.StatusCode != 404 {
			t.Fatalf("download after erasure: %d", resp.StatusCode)
		}
		h.do("GET", "/usage", alice.token, nil).want(t, 200).decode(t, &usage)
		if usage.Attachments.StoredBytes != 0 {
			t.Fatalf("stored bytes after erasure: %d", usage.Attachments.StoredBytes)
		}
	})
}

// TestUploadQuotaUnderConcurrency: 20 uploads at once against a quota
// that takes a few of them: the quota holds, every other upload is a
// named 413, and what is stored is exactly what the quota counts.
func TestUploadQuotaUnderConcurrency(t *testing.T) {
	onBothStores(t, func(t *testing.T, backend string) {
		pic := testPNG(64, 64)
		quota := int64(6*len(pic) + 6*1024) // room for about six uploads' reservations
		h := newHarnessOn(t, backend, func(c *app.Config) { c.AttachmentQuota = quota })
		alice := h.signUp()
		var wg sync.WaitGroup
		statuses := make(chan response, 20)
		for range 20 {
			wg.Go(func() { statuses <- h.upload(alice.token, "p.png", "image/png", pic, "") })
		}
		wg.Wait()
		close(statuses)
		taken := 0
		for r := range statuses {
			switch {
			case r.status == 201:
				taken++
			case r.status != 413 || r.errorCode() != "quota_exceeded":
				t.Fatalf("a concurrent upload answered %d %s", r.status, r.body)
			}
		}
		keys := h.objects()
		var usage struct {
			Attachments struct{ StoredBytes int64 } `json:"attachments"`
		}
		h.do("GET", "/usage", alice.token, nil).want(t, 200).decode(t, &usage)
		stored := int64(len(keys) * len(pic))
		if taken == 0 || len(keys) != taken || stored > quota || usage.Attachments.StoredBytes != stored {
			t.Fatalf("%d taken, %d objects (%d bytes, quota %d), usage says %d", taken, len(keys), stored, quota, usage.Attachments.StoredBytes)
		}
	})
}
