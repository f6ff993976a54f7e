package memorydb_test

import (
	"testing"

	"github.com/chatmemory/backend/memorydb"
	"github.com/chatmemory/backend/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend { return memorydb.New() })
}
