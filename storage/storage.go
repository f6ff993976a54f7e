// Package storage names what a storage backend is, in one place: every
// interface a domain package declares for storage. Firestore
// (firestoredb) and the in-process store (inprocdb) implement it; the
// contract suite (storetest) runs against both; the API is built on it.
package storage

import (
	"context"

	"github.com/chatmemory/backend/attachments"
	"github.com/chatmemory/backend/chat"
	"github.com/chatmemory/backend/history"
	"github.com/chatmemory/backend/longterm"
	"github.com/chatmemory/backend/recall"
	"github.com/chatmemory/backend/retention"
	"github.com/chatmemory/backend/sessions"
)

// Store is a storage backend.
type Store interface {
	sessions.Store
	history.Store
	history.FeedbackStore
	chat.TurnStore
	chat.JobStore
	chat.Drafts
	chat.UsageStore
	longterm.Store
	longterm.RollUpStore
	retention.Store
	retention.PrivacyStore
	retention.AccountStore
	recall.BackfillStore
	attachments.Store
	// Ping checks that the store answers (the health check).
	Ping(ctx context.Context) error
}
