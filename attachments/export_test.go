package attachments_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/retention"
)

// bigBlobs answers every Open with size bytes made as they are read.
type bigBlobs struct {
	attachments.Blobs
	size int64
}

func (b bigBlobs) Open(context.Context, string) (io.ReadCloser, error) {
	return io.NopCloser(io.LimitReader(pattern{}, b.size)), nil
}

// pattern reads 0, 1, 2, … 250, 0, 1, … without end.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i % 251)
	}
	return len(p), nil
}

// countingTail counts what is written and keeps its last bytes.
type countingTail struct {
	n    int64
	tail []byte
}

func (c *countingTail) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	if c.tail == nil {
		c.tail = make([]byte, 0, 128)
	}
	if len(p) >= 64 {
		c.tail = append(c.tail[:0], p[len(p)-64:]...)
		return len(p), nil
	}
	c.tail = append(c.tail, p...) // within the capacity: no allocation
	if len(c.tail) > 64 {
		copy(c.tail, c.tail[len(c.tail)-64:])
		c.tail = c.tail[:64]
	}
	return len(p), nil
}

// TestExportStreamsBytes: a file's bytes go into the export in base64 a
// chunk at a time: exporting a 32 MiB file allocates a small part of it.
func TestExportStreamsBytes(t *testing.T) {
	e := newEnv(0, 0, 0)
	a, err := e.upload("big.txt", "", []byte("stands in for a big file"))
	if err != nil {
		t.Fatal(err)
	}
	const size = 32 << 20
	e.svc.Blobs = bigBlobs{Blobs: e.blobs, size: size}
	v, err := e.svc.ExportUser(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	sv, ok := v.(retention.StreamedExport)
	if !ok {
		t.Fatalf("the attachments' export %T is not streamed", v)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := &countingTail{}
	if err := sv.WriteJSON(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("exporting a %d-byte file allocated %d bytes", size, alloc)
	if alloc > 2<<20 {
		t.Fatalf("exporting a %d-byte file allocated %d bytes", size, alloc)
	}
	rec, _ := json.Marshal(a)
	head := len(rec) - 1 + len(`,"url":"/attachments/`+a.ID+`","data":"`)
	if want := int64(1 + head + base64.StdEncoding.EncodedLen(size) + 3); out.n != want || !strings.HasSuffix(string(out.tail), `"}]`) {
		t.Fatalf("wrote %d bytes ending %q; want %d ending with the closed array", out.n, out.tail, want)
	}
}

// TestExportJSON: the export's attachments are a JSON array of records
// with their bytes, which decode to what was uploaded.
func TestExportJSON(t *testing.T) {
	e := newEnv(0, 0, 0)
	a, err := e.upload("cat.png", "", pngFile)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.svc.ExportUser(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := v.(retention.StreamedExport).WriteJSON(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		ID, Type, URL string
		Data          []byte
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%s: %v", buf.String(), err)
	}
	if len(got) != 1 || got[0].ID != a.ID || got[0].Type != "image/png" || got[0].URL != a.URL() || !bytes.Equal(got[0].Data, pngFile) {
		t.Fatalf("export %s", buf.String())
	}
	if v, err := e.svc.ExportUser(context.Background(), "bob"); v != nil || err != nil {
		t.Fatalf("bob's export = %v, %v; want nothing", v, err)
	}
}
