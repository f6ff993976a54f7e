package bench

import (
	"context"
	"testing"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/history"
)

// TestUploadCosts: an upload is the quota's reservation (a read and a
// commit), the record's create, and giving back what the file did not use
// (a read and a commit); Cloud Storage sees one request per 256 KiB
// chunk; a 1024×768 image adds 765 tokens at high detail.
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
		if f.Writes != 3 || f.RoundTrips != 5 || (i > 0 && f.Reads != 2) {
			t.Errorf("%s: %d reads, %d writes, %d round trips; want 2, 3, 5", f.Name, f.Reads, f.Writes, f.RoundTrips)
		}
	}
	if photo := run.Files[0]; photo.StorageRequests != int64(photo.Bytes/(256<<10)+2) || photo.ImageTokensHigh != 765 || photo.ImageTokensLow != 85 {
		t.Errorf("photo: %+v", photo)
	}
	if icon := run.Files[1]; icon.StorageRequests != 1 {
		t.Errorf("icon: %d Storage requests, want 1", icon.StorageRequests)
	}
}
