package inprocdb_test

import (
	"testing"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return inprocdb.New() })
}

func TestBlobsContract(t *testing.T) {
	storetest.RunBlobs(t, func(*testing.T) attachments.Blobs { return inprocdb.NewBlobs() })
}
