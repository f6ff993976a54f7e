package storetest

import (
	"testing"

	"github.com/chatmemory/backend/emulator/emulatortest"
	"github.com/chatmemory/backend/firestoredb"
	"github.com/chatmemory/backend/inprocdb"
)

// Both opens each backend by its name, for the tests that run on both:
// the in-process store, and Firestore on the emulator with a new, empty
// database for each call.
var Both = map[string]func(t *testing.T) Backend{
	"inprocess": func(*testing.T) Backend { return inprocdb.New() },
	"firestore": func(t *testing.T) Backend {
		client, _ := emulatortest.Firestore(t)
		return firestoredb.New(client)
	},
}
