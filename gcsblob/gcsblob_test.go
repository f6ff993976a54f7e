package gcsblob_test

import (
	"testing"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/gcsblob"
	"github.com/chatmemory/backend/storetest"
)

// open is a new bucket on the Cloud Storage emulator.
func open(t *testing.T) *gcsblob.Blobs {
	client, bucket := emulatortest.Storage(t)
	return gcsblob.New(client, bucket)
}

func TestContract(t *testing.T) {
	storetest.RunBlobs(t, func(t *testing.T) attachments.Blobs { return open(t) })
}
