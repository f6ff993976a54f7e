package bench

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/chatmemory/backend/firestoredb"
	kparallel "github.com/chatmemory/backend/kernel/parallel"
	"github.com/chatmemory/backend/recall"
)

// earlierUnits is the collection the search at scale copies every unit
// into, under its session (chat_sessions/{sid}/earlierUnits/{id}), as
// units were kept before they moved to their user's collection: its own
// collection id, so that each layout's queries go through as many units
// as they did alone.
const earlierUnits = "recall_earlier"

// copyToEarlierLayout copies every unit of the run into earlierUnits
// under its session, and returns how many.
func copyToEarlierLayout(ctx context.Context, client *firestore.Client) (int, error) {
	snaps, err := client.CollectionGroup(firestoredb.RecallCollection).Documents(ctx).GetAll()
	if err != nil {
		return 0, err
	}
	bw := client.BulkWriter(ctx)
	for _, s := range snaps {
		sid, _ := s.DataAt("sessionId")
		id, _ := sid.(string)
		if _, err := bw.Set(client.Collection(firestoredb.SessionsCollection).Doc(id).Collection(earlierUnits).Doc(s.Ref.ID), s.Data()); err != nil {
			return 0, err
		}
	}
	bw.End()
	return len(snaps), nil
}

// storeRPCs times what a search asks of the store, all at once as
// retrieval asks it (for each term of q a query of at most 40 units
// holding it, the vector query of the limit's 2 × 10 nearest, the read of
// the user's list; not the count of the user's units, which a retrieval
// makes once in recall.UnitCountTTL for a user), of the units
// in their user's collection, or with earlier as the earlier layout asked
// it: the collection group of units under their sessions, filtered by
// userId. The embedding is made before and not timed.
func storeRPCs(ctx context.Context, client *firestore.Client, uid string, v []float32, q string, earlier bool) (time.Duration, error) {
	units := client.Collection(firestoredb.UsageCollection).Doc(firestoredb.UserDocID(uid)).Collection(firestoredb.RecallCollection).Query
	if earlier {
		units = client.CollectionGroup(earlierUnits).Where("userId", "==", uid)
	}
	terms := recall.QueryTerms(q)
	calls := []func() error{
		func() error { _, err := nearestQuery(units, v).Documents(ctx).GetAll(); return err },
		func() error { return readList(ctx, client, uid) },
	}
	for _, t := range terms {
		holding := termQuery(units, t)
		calls = append(calls, func() error { _, err := holding.Documents(ctx).GetAll(); return err })
	}
	errs := make([]error, len(calls))
	start := time.Now()
	kparallel.Each(len(calls), len(calls), func(i int) { errs[i] = calls[i]() })
	return time.Since(start), cmp.Or(errs...)
}

// nearestQuery is a search's vector query of units: the limit's 2 × 10
// nearest to v.
func nearestQuery(units firestore.Query, v []float32) firestore.VectorQuery {
	return units.FindNearest("embedding", firestore.Vector32(v), 20, firestore.DistanceMeasureCosine, nil)
}

// termQuery is a search's query of units for term: at most 40 holding it.
func termQuery(units firestore.Query, term string) firestore.Query {
	return units.Where("has."+term, "==", true).Limit(40)
}

// readList reads uid's list of deleted and archived sessions, as a search
// does (none yet is no error).
func readList(ctx context.Context, client *firestore.Client, uid string) error {
	_, err := client.Collection(firestoredb.UsageCollection).Doc(firestoredb.UserDocID(uid)).
		Collection(firestoredb.SessionListsCollection).Doc("deleted").Get(ctx)
	if notFound(err) {
		return nil
	}
	return err
}

// uidOf is the user id an ID token of the Auth emulator names.
func uidOf(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) < 2 {
		return ""
	}
	data, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		UserID string `json:"user_id"`
	}
	json.Unmarshal(data, &claims)
	return claims.UserID
}
