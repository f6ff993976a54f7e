package bench

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/chatmemory/backend/app"
	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/emulator"
	"github.com/chatmemory/backend/firestoredb/firestoretest"
	"github.com/chatmemory/backend/gcsblob"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/llm"
)

// UploadRun is what one upload costs, by kind of file: Firestore's
// reads, writes and round trips, Cloud Storage's requests, and what an
// image adds to a prompt (OpenAI's formula); then what a turn costs
// without files and with them.
type UploadRun struct {
	Files []UploadCost `json:"files"`
	Turns []TurnCost   `json:"turns"`
}

// TurnCost is one turn of a new session (its after-turn work included)
// with the files it names: Firestore's and Cloud Storage's operations,
// and the tokens of its user message and of its files.
type TurnCost struct {
	Files           string `json:"files"`
	Reads           int64  `json:"reads"`
	Writes          int64  `json:"writes"`
	RoundTrips      int64  `json:"roundTrips"`
	StorageRequests int64  `json:"storageRequests"`
	MessageTokens   int    `json:"messageTokens"`
	FileTokens      int    `json:"fileTokens"`
}

// UploadCost is the cost of uploading one file.
type UploadCost struct {
	Name            string  `json:"name"`
	Bytes           int     `json:"bytes"`
	Reads           int64   `json:"reads"`
	Writes          int64   `json:"writes"`
	RoundTrips      int64   `json:"roundTrips"`
	StorageRequests int64   `json:"storageRequests"`
	Ms              float64 `json:"ms"`
	ImageTokensHigh int     `json:"imageTokensHigh,omitempty"`
	ImageTokensLow  int     `json:"imageTokensLow,omitempty"`
}

// formOverhead is what a browser's multipart form adds to a file, which
// the request's Content-Length (the upload's reservation) includes.
const formOverhead = 200

// runUploads uploads each kind of file once, through the service the
// API's POST /attachments calls, on the Firestore emulator and a Cloud
// Storage emulator (the one STORAGE_EMULATOR_HOST names, or one started
// here).
func runUploads(ctx context.Context, tok *history.TikToken) (*UploadRun, error) {
	if os.Getenv("STORAGE_EMULATOR_HOST") == "" {
		st, err := emulator.StartStorage("127.0.0.1:0", nil)
		if err != nil {
			return nil, err
		}
		defer st.Stop()
		os.Setenv("STORAGE_EMULATOR_HOST", st.Addr)
		defer os.Unsetenv("STORAGE_EMULATOR_HOST")
	}
	a, counter, requests, closeAll, err := uploadApp(ctx, tok)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	svc := a.Attachments
	run := &UploadRun{}
	var ids []string
	for _, f := range benchFiles() {
		before, reqs, start := counter.Snapshot(), requests.Load(), time.Now()
		a, err := svc.Upload(ctx, "bench-user", attachments.Upload{Name: f.name, Body: bytes.NewReader(f.data), SizeHint: int64(len(f.data)) + formOverhead})
		if err != nil {
			return nil, fmt.Errorf("upload %s: %w", f.name, err)
		}
		c := counter.Snapshot().Sub(before)
		u := UploadCost{Name: f.name, Bytes: len(f.data), Reads: c.Reads, Writes: c.Writes, RoundTrips: c.RoundTrips,
			StorageRequests: requests.Load() - reqs, Ms: ms(time.Since(start))}
		if a.IsImage() {
			u.ImageTokensHigh, u.ImageTokensLow = attachments.ImageTokens(a.Width, a.Height, "high"), attachments.ImageTokens(a.Width, a.Height, "low")
		}
		run.Files = append(run.Files, u)
		ids = append(ids, a.ID)
	}
	for _, pick := range [][]int{nil, {0}, {1, 2}} { // a file belongs to the session that names it first
		t, err := turnCost(ctx, a, counter, requests, pick, ids)
		if err != nil {
			return nil, err
		}
		run.Turns = append(run.Turns, t)
	}
	return run, nil
}

// turnCost runs one turn of a new session naming the files pick picks
// (of benchFiles, uploaded as ids) and counts what it did.
func turnCost(ctx context.Context, a *app.App, counter *firestoretest.Counter, requests *atomic.Int64, pick []int, ids []string) (TurnCost, error) {
	files := benchFiles()
	t := TurnCost{Files: "none"}
	var names, named []string
	for _, i := range pick {
		names, named = append(names, files[i].name), append(named, ids[i])
	}
	if len(names) > 0 {
		t.Files = strings.Join(names, " + ")
	}
	before, reqs := counter.Snapshot(), requests.Load()
	res, err := a.Chat.Turn(ctx, chat.TurnRequest{UserID: "bench-user", Message: "What do these show?", Attachments: named})
	if err != nil {
		return t, fmt.Errorf("turn with %s: %w", t.Files, err)
	}
	c := counter.Snapshot().Sub(before)
	t.Reads, t.Writes, t.RoundTrips, t.StorageRequests = c.Reads, c.Writes, c.RoundTrips, requests.Load()-reqs
	t.MessageTokens, t.FileTokens = res.User.Tokens, history.PartTokens(res.User.Attachments)
	return t, nil
}

// uploadApp is the app over counted Firestore and Cloud Storage clients.
func uploadApp(ctx context.Context, tok *history.TikToken) (*app.App, *firestoretest.Counter, *atomic.Int64, func(), error) {
	counter := &firestoretest.Counter{}
	fs, err := firestoretest.Dial(ctx, fmt.Sprintf("bench-uploads-%d", time.Now().UnixNano()), counter)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	requests := &atomic.Int64{}
	hc := &http.Client{Transport: countedTransport{next: http.DefaultTransport, n: requests}}
	gcs, err := storage.NewClient(ctx, storage.WithJSONReads(), option.WithHTTPClient(hc))
	if err != nil {
		fs.Close()
		return nil, nil, nil, nil, err
	}
	closeAll := func() { fs.Close(); gcs.Close() }
	if err := gcs.Bucket("bench-uploads").Create(ctx, "bench", nil); err != nil && !strings.Contains(err.Error(), "409") {
		closeAll()
		return nil, nil, nil, nil, err
	}
	requests.Store(0)
	a := app.New(app.Config{ChatModel: "gpt-4o-mini"}, app.Deps{Store: app.Firestore(fs), Blobs: gcsblob.New(gcs, "bench-uploads"),
		Model: llm.Offline{}, Tokens: tok, Log: slog.New(slog.DiscardHandler)})
	a.Chat.Runner = chat.Now{} // a turn's operations include its job's
	return a, counter, requests, closeAll, nil
}

// countedTransport counts the HTTP requests a client sends.
type countedTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (t countedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}

type benchFile struct {
	name string
	data []byte
}

// benchFiles are a photo-sized PNG (noise, so it does not compress), a
// small one, and a text document.
func benchFiles() []benchFile {
	return []benchFile{
		{"photo.png", noisePNG(1024, 768)},
		{"icon.png", noisePNG(64, 64)},
		{"notes.md", []byte(strings.Repeat(words(7, 200)+"\n\n", 25))},
	}
}

func noisePNG(w, h int) []byte {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range m.Pix {
		m.Pix[i] = uint8(r.IntN(256))
	}
	m.Set(0, 0, color.RGBA{A: 255})
	var b bytes.Buffer
	png.Encode(&b, m)
	return b.Bytes()
}

// writeUploads writes the upload table.
func (r *Report) writeUploads(w io.Writer) {
	if r.Uploads == nil {
		return
	}
	fmt.Fprintln(w, "Attachments: one upload each (POST /attachments' service; Cloud Storage on fake-gcs-server, resumable uploads in 256 KiB chunks; the tokens are OpenAI's formula for the image, high and low detail):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| file | bytes | Firestore reads | writes | round trips | Storage requests | ms | image tokens (high / low) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, f := range r.Uploads.Files {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %.1f | %d / %d |\n", f.Name, f.Bytes, f.Reads, f.Writes, f.RoundTrips, f.StorageRequests, f.Ms, f.ImageTokensHigh, f.ImageTokensLow)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "A turn of a new session naming them (the offline stand-in answers; after-turn work included; images sent at auto detail, counted as high):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| files | Firestore reads | writes | round trips | Storage requests | user message tokens | of them, the files' |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, t := range r.Uploads.Turns {
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d |\n", t.Files, t.Reads, t.Writes, t.RoundTrips, t.StorageRequests, t.MessageTokens, t.FileTokens)
	}
	fmt.Fprintln(w)
}
