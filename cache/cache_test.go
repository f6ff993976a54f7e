package cache_test

import (
	"testing"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/cache"
	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/inprocdb"
	"github.com/chatmemory/backend/storage"
	"github.com/chatmemory/backend/storetest"
)

// instance is the Firestore store as one instance serves it.
func instance(client *firestore.Client) *cache.Store {
	return cache.New(firestoredb.New(client), cache.DefaultBytes)
}

// TestContract: the cache in front of each store passes the contract
// every store passes; so does a cache in front of a store that offers
// nothing of Known (it keeps nothing, and every call goes through).
func TestContract(t *testing.T) {
	t.Run("inprocess", func(t *testing.T) {
		storetest.Run(t, func(*testing.T) storetest.Backend { return cache.New(inprocdb.New(), cache.DefaultBytes) })
	})
	t.Run("without-known", func(t *testing.T) {
		storetest.Run(t, func(*testing.T) storetest.Backend { return cache.New(onlyStore{inprocdb.New()}, cache.DefaultBytes) })
	})
	t.Run("firestore", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storetest.Backend {
			client, _ := emulatortest.Firestore(t)
			return instance(client)
		})
	})
}

// onlyStore is a store that offers nothing of Known.
type onlyStore struct{ storage.Store }
