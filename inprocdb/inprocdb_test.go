package inprocdb_test

import (
	"testing"

	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return inprocdb.New() })
}
