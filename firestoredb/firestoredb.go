// Package firestoredb is the Cloud Firestore store: it implements every
// storage interface the domain packages declare, one file for each store
// behaviour: sessions, messages, the tail (in pages), a chat turn and its
// draft, usage, long-term memory, retention and purges. Every Firestore
// detail (documents and field names, queries, preconditions, transactions,
// gRPC codes, index exemptions) stays in this package; docs.go says which
// domain values are stored as they are.
package firestoredb

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/kernel/errs"
)

// Collection names.
const (
	SessionsCollection = "chat_sessions"
	MessagesCollection = "messages"
	// PurgesCollection holds one marker per purge in progress, so a purge
	// cut off half-way is found and finished by the next sweep.
	PurgesCollection = "chat_purges"
	healthCollection = "chat_health"
)

// DefaultMaxAttempts is how often a transaction is tried under contention.
// The client's default (5) gives up too soon when many writers share one
// session; each attempt waits for the others, it does not spin.
const DefaultMaxAttempts = 50

// DB is a Firestore-backed store.
type DB struct {
	client     *firestore.Client
	timeout    time.Duration
	purgeLease time.Duration    // 0: DefaultPurgeLease
	now        func() time.Time // the clock of purge leases; nil: time.Now
}

// Option configures a DB.
type Option func(*DB)

// Timeout bounds each operation: a read, a query page, a transaction with
// its retries, a page of deletes. Past it the operation fails with
// EUNAVAILABLE, so an unreachable Firestore is an answer, not a hang.
// Zero (the default) leaves operations to the caller's context alone.
func Timeout(d time.Duration) Option { return func(db *DB) { db.timeout = d } }

// New wraps a Firestore client. The caller owns the client.
func New(client *firestore.Client, opts ...Option) *DB {
	db := &DB{client: client}
	for _, o := range opts {
		o(db)
	}
	return db
}

// Ping reads one (absent) document to check that Firestore answers.
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	_, err := db.client.Collection(healthCollection).Doc("ping").Get(ctx)
	if status.Code(err) == codes.NotFound {
		return nil
	}
	return translate(err)
}

func (db *DB) runTx(ctx context.Context, fn func(context.Context, *firestore.Transaction) error) error {
	ctx, cancel := db.op(ctx)
	defer cancel()
	err := db.client.RunTransaction(ctx, fn, firestore.MaxAttempts(DefaultMaxAttempts))
	if status.Code(err) == codes.InvalidArgument && !isDomain(err) && strings.Contains(strings.ToLower(status.Convert(err).Message()), "transaction") {
		// The client retried a commit whose answer was lost, and the
		// transaction had ended: whether it landed is unknown.
		return errs.Wrap(errs.EUNAVAILABLE, err, "the database is unavailable; try again")
	}
	return translate(err)
}

// getAll reads documents in one round trip: the client's, or a
// transaction's.
type getAll func([]*firestore.DocumentRef) ([]*firestore.DocumentSnapshot, error)

// optimisticTries is how many times optimistic commits before it falls
// back to a transaction.
const optimisticTries = 12

// optimistic commits the writes attempt returns, reading again and retrying
// when the commit finds that what attempt read has changed meanwhile (a
// precondition failed, or a document to create exists). Each attempt is
// one batched read and one commit: no transaction, so no BeginTransaction
// round trip and no locks held while the caller plans. Under heavy
// contention (many writers on one session) optimism could starve a
// writer, so after optimisticTries it runs attempt in a transaction,
// whose locks guarantee progress. Nil writes write nothing. It returns the
// commit's results (nil after a transaction, which does not report them).
//
// A fault that may pass (the read or the commit did not get through, or
// the commit's answer was lost on the way) is tried again, up to
// faultTries times: attempt reads afresh, so a commit that did land is
// found in what it reads. Every attempt therefore knows its own writes:
// it names what it creates the same way each time (a key, a token, ids
// chosen before the first attempt) and plans nothing once it finds them.
func (db *DB) optimistic(ctx context.Context, attempt func(ctx context.Context, get getAll) (*writes, error)) ([]*firestore.WriteResult, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	get := db.getAllFn(ctx)
	for i, faults := 0, 0; i < optimisticTries; {
		w, err := attempt(ctx, get)
		if err == nil && w == nil {
			return nil, nil
		}
		if err == nil {
			var res []*firestore.WriteResult
			if res, err = w.commit(ctx, db.client); err == nil {
				return res, nil
			}
		}
		switch {
		case stale(err) && !isDomain(err):
			i++
		case transient(ctx, err) && faults < faultTries:
			faults++
		default:
			return nil, translate(err)
		}
		if err := backoff(ctx, i+faults); err != nil {
			return nil, translate(err)
		}
	}
	err := db.client.RunTransaction(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		w, err := attempt(ctx, tx.GetAll)
		if err != nil || w == nil {
			return err
		}
		return w.apply(tx)
	}, firestore.MaxAttempts(DefaultMaxAttempts))
	return nil, translate(err)
}

// op bounds one operation by the DB's timeout.
func (db *DB) op(ctx context.Context) (context.Context, context.CancelFunc) {
	if db.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, db.timeout)
}

// translate turns Firestore's errors into the application's codes. Errors
// that already carry a code (from domain callbacks) pass through.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errs.Wrap(errs.EUNAVAILABLE, err, "the request was cancelled or timed out")
	}
	switch status.Code(err) {
	case codes.NotFound:
		return errs.Wrap(errs.ENOTFOUND, err, "not found")
	case codes.AlreadyExists:
		return errs.Wrap(errs.ECONFLICT, err, "already exists")
	case codes.InvalidArgument:
		// A request the database refuses as malformed (an id it cannot
		// store, say): the caller's to fix, not an outage. The edge
		// checks every id first, so this is a backstop.
		return errs.Wrap(errs.EINVALID, err, "the request names something the database cannot store")
	case codes.Aborted:
		return errs.Wrap(errs.EUNAVAILABLE, err, "too many concurrent writes; try again")
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Canceled:
		return errs.Wrap(errs.EUNAVAILABLE, err, "the database is unavailable; try again")
	case codes.Internal, codes.Unknown:
		if _, ok := status.FromError(err); ok { // Firestore's own: retried with backoff, it passes
			return errs.Wrap(errs.EUNAVAILABLE, err, "the database is unavailable; try again")
		}
		return errs.Wrap(errs.EINTERNAL, err, "internal error")
	default:
		return errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
}

// transient reports a failure of Firestore that may pass on its own: the
// request did not get through, was cut, or its answer was lost (after
// which a commit may or may not have landed). A domain error, or the
// caller's own deadline or cancellation, is not.
func transient(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || isDomain(err) {
		return false
	}
	if _, ok := status.FromError(err); !ok {
		return false
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Internal, codes.Unknown,
		codes.ResourceExhausted, codes.Aborted, codes.Canceled:
		return true
	}
	return false
}

// faultTries is how many faults that may pass one operation rides out.
const faultTries = 8

// isDomain reports an error a plan or a decoder returned, not Firestore.
func isDomain(err error) bool {
	var e *errs.Error
	return errors.As(err, &e)
}

// stale reports a commit refused because what it was planned on changed.
func stale(err error) bool {
	switch status.Code(err) {
	case codes.FailedPrecondition, codes.AlreadyExists, codes.Aborted, codes.NotFound:
		return true
	}
	return false
}

// backoff waits a random while, longer after each failed attempt, so that
// writers racing for one document spread out.
func backoff(ctx context.Context, attempt int) error {
	ceiling := 2 * time.Millisecond << min(attempt, 8)
	t := time.NewTimer(time.Duration(rand.Int64N(int64(ceiling) + 1)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// changedUpdates lists the top-level fields of doc that differ from old's
// (both document structs of one type), at least one, so that an update
// conditioned on old's update time sends and rewrites only what changed.
func changedUpdates(old, doc any) []firestore.Update {
	was, now := fieldUpdates(old), fieldUpdates(doc)
	var out []firestore.Update
	for i := range now {
		if !sameValue(was[i].Value, now[i].Value) {
			out = append(out, now[i])
		}
	}
	if len(out) == 0 {
		out = now[:1] // the condition still needs a write
	}
	return out
}

// fieldUpdates lists every top-level field of a document struct (by its
// firestore tags) as an update: Update with these replaces the document's
// fields as Set would, but can carry a precondition, which Set cannot.
func fieldUpdates(doc any) []firestore.Update {
	return structUpdates(reflect.Indirect(reflect.ValueOf(doc)))
}

func structUpdates(v reflect.Value) []firestore.Update {
	t := v.Type()
	var out []firestore.Update
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("firestore"), ",")
		if (!f.IsExported() && !f.Anonymous) || name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			out = append(out, structUpdates(v.Field(i))...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		var value any = firestore.Delete
		if !strings.Contains(opts, "omitempty") || !v.Field(i).IsZero() {
			value = v.Field(i).Interface()
		}
		out = append(out, firestore.Update{FieldPath: firestore.FieldPath{name}, Value: value})
	}
	return out
}

// sameValue compares field values as stored: times by instant.
func sameValue(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	if ta, ok := a.(*time.Time); ok {
		tb, ok := b.(*time.Time)
		return ok && (ta == nil) == (tb == nil) && (ta == nil || ta.Equal(*tb))
	}
	return reflect.DeepEqual(a, b)
}

// writes are the writes of one commit, in order, remembering the place of
// each, so that the update time a commit gave a document can be found in
// its results. They commit as a batch, or within a transaction.
type writes struct {
	ops        []writeOp
	at         map[string]int // document path → index of its write
	contextRev string         // what fenceContext set the session's contextRev to ("": it did not)
}

type writeOp struct {
	kind    byte // 'c'reate, 's'et, 'u'pdate, 'd'elete
	ref     *firestore.DocumentRef
	data    any
	updates []firestore.Update
	pre     []firestore.Precondition
	setOpts []firestore.SetOption
}

func (db *DB) newWrites() *writes { return &writes{at: map[string]int{}} }

// addUpdate adds u to the update of ref planned already, if there is one.
func (w *writes) addUpdate(ref *firestore.DocumentRef, u firestore.Update) bool {
	i, ok := w.at[ref.Path]
	if !ok || w.ops[i].kind != 'u' {
		return false
	}
	w.ops[i].updates = append(w.ops[i].updates, u)
	return true
}

func (w *writes) Create(ref *firestore.DocumentRef, data any) {
	w.add(writeOp{kind: 'c', ref: ref, data: data})
}

func (w *writes) Set(ref *firestore.DocumentRef, data any, opts ...firestore.SetOption) {
	w.add(writeOp{kind: 's', ref: ref, data: data, setOpts: opts})
}

func (w *writes) Update(ref *firestore.DocumentRef, u []firestore.Update, pre ...firestore.Precondition) {
	w.add(writeOp{kind: 'u', ref: ref, updates: u, pre: pre})
}

func (w *writes) Delete(ref *firestore.DocumentRef, pre ...firestore.Precondition) {
	w.add(writeOp{kind: 'd', ref: ref, pre: pre})
}

func (w *writes) add(op writeOp) {
	w.at[op.ref.Path] = len(w.ops)
	w.ops = append(w.ops, op)
}

// commit writes w as one batch: all or nothing, in one round trip.
func (w *writes) commit(ctx context.Context, client *firestore.Client) ([]*firestore.WriteResult, error) {
	b := client.Batch()
	for _, op := range w.ops {
		switch op.kind {
		case 'c':
			b.Create(op.ref, op.data)
		case 's':
			b.Set(op.ref, op.data, op.setOpts...)
		case 'u':
			b.Update(op.ref, op.updates, op.pre...)
		case 'd':
			b.Delete(op.ref, op.pre...)
		}
	}
	return b.Commit(ctx)
}

// apply adds w's writes to a transaction.
func (w *writes) apply(tx *firestore.Transaction) error {
	for _, op := range w.ops {
		var err error
		switch op.kind {
		case 'c':
			err = tx.Create(op.ref, op.data)
		case 's':
			err = tx.Set(op.ref, op.data, op.setOpts...)
		case 'u':
			err = tx.Update(op.ref, op.updates, op.pre...)
		case 'd':
			err = tx.Delete(op.ref, op.pre...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// time returns the update time the commit gave ref's document.
func (w *writes) time(res []*firestore.WriteResult, ref *firestore.DocumentRef) (time.Time, bool) {
	i, ok := w.at[ref.Path]
	if !ok || i >= len(res) {
		return time.Time{}, false
	}
	return res[i].UpdateTime, true
}
