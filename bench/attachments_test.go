package bench

import (
	"context"
	"testing"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/history"
)

// TestUploadCosts: an upload is the quota's reservation (a read and a
// commit), then the record's create with giving back what the file did
// not use, in one commit fenced by the quota record (reading it and the
// record's place: two reads, one round trip); Cloud Storage sees one
// request per 256 KiB chunk; a 1024×768 image adds 765 tokens at high
// detail.
func TestUploadCosts(t *testing.T) {
	emulatortest.Require(t, "FIRESTORE_EMULATOR_HOST")
	tok, err := history.NewTikToken()
	if err != nil {
		t.Fatal(err)
	}
	run, err := runUploads(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range run.Files {
		t.Logf("%+v", f)
		if f.Writes != 3 || f.RoundTrips != 4 || (i > 0 && f.Reads != 3) {
			t.Errorf("%s: %d reads, %d writes, %d round trips; want 3, 3, 4", f.Name, f.Reads, f.Writes, f.RoundTrips)
		}
	}
	if photo := run.Files[0]; photo.StorageRequests != int64(photo.Bytes/(256<<10)+2) || photo.ImageTokensHigh != 765 || photo.ImageTokensLow != 85 {
		t.Errorf("photo: %+v", photo)
	}
	if icon := run.Files[1]; icon.StorageRequests != 1 {
		t.Errorf("icon: %d Storage requests, want 1", icon.StorageRequests)
	}
	// A turn naming the photo reads its record and marks it referenced
	// (a transaction: a read, a commit) before the claim, then reads its
	// record and its bytes (Cloud Storage, one request) before the model:
	// three reads and a write more; its 765 tokens are the message's.
	plain, photo, both := run.Turns[0], run.Turns[1], run.Turns[2]
	t.Logf("turns: %+v", run.Turns)
	if plain.StorageRequests != 0 || plain.FileTokens != 0 || photo.StorageRequests != 1 || photo.FileTokens != 765 ||
		photo.MessageTokens-photo.FileTokens != plain.MessageTokens || photo.Reads != plain.Reads+3 || photo.Writes != plain.Writes+1 {
		t.Errorf("a turn with the photo %+v, without %+v", photo, plain)
	}
	// Two files: each read, marked, and read again before the model (the
	// icon's record and bytes, the document's record for its text).
	if both.FileTokens <= 255 || both.Reads != plain.Reads+6 || both.Writes != plain.Writes+2 || both.StorageRequests != 1 {
		t.Errorf("a turn with the icon and notes.md %+v, without files %+v", both, plain)
	}
}
