package firestoredb

import (
	"context"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/kernel/errs"
	"github.com/chatmemory/backend/longterm"
)

// Long-term memory lives under users/{uid}: the memory document (the
// block a turn reads, the profile, the history), its live facts in
// users/{uid}/memory/facts, and the superseded facts in its facts
// subcollection, for audit. A turn reads the memory document alone: the
// live facts (up to the cap, each with its packed vector when embedded)
// are read by what changes them (learning, edits, forgetting) and by a
// turn that chooses facts by relevance.
const (
	UsersCollection  = "users"
	FactsCollection  = "facts"
	MemoryCollection = "memory"
	liveFactsDocID   = "facts"
)

// liveFactsDoc is users/{uid}/memory/facts.
type liveFactsDoc struct {
	UserID string    `firestore:"userId"`
	Facts  []factDoc `firestore:"facts"`
}

// memoryUserDoc is users/{uid}. Facts is read only: documents written
// before the live facts had a document of their own hold them here, until
// their next save moves them.
type memoryUserDoc struct {
	UserID      string                `firestore:"userId"`
	Disabled    bool                  `firestore:"disabled"`
	Facts       []factDoc             `firestore:"facts,omitempty"`
	Work        longterm.ProfileField `firestore:"work"`
	Personal    longterm.ProfileField `firestore:"personal"`
	Focus       longterm.ProfileField `firestore:"focus"`
	Block       string                `firestore:"block"`
	BlockTokens int                   `firestore:"blockTokens"`
	BlockCut    bool                  `firestore:"blockCut,omitempty"`
	StableAt    time.Time             `firestore:"stableAt"` // divides the block (longterm.User.StableAt)
	VectorModel string                `firestore:"vectorModel,omitempty"`
	// History is the episodic history (exempt from indexing);
	// historyDueAt, when it next has something to move, which the daily
	// roll-up queries.
	History      longterm.History `firestore:"history"`
	HistoryDueAt *time.Time       `firestore:"historyDueAt"`
	// Filed is whether superseded facts may be in the facts
	// subcollection: set by the first save that files one, never unset
	// (a document written before it was kept, without it, may have some).
	Filed     *bool     `firestore:"filed"`
	Version   int64     `firestore:"version"`
	UpdatedAt time.Time `firestore:"updatedAt"`
}

type factDoc struct {
	ID         string            `firestore:"id"`
	UserID     string            `firestore:"userId"`
	Content    string            `firestore:"content"`
	Category   string            `firestore:"category"`
	Confidence float64           `firestore:"confidence"`
	Sources    []longterm.Source `firestore:"sources"`
	// The one source of facts stored before facts had several; read only.
	SessionID       string     `firestore:"sessionId,omitempty"`
	StartSeq        int        `firestore:"startSeq,omitempty"`
	EndSeq          int        `firestore:"endSeq,omitempty"`
	CreatedAt       time.Time  `firestore:"createdAt"`
	LastConfirmedAt time.Time  `firestore:"lastConfirmedAt"`
	InvalidAt       *time.Time `firestore:"invalidAt"`
	SupersededBy    string     `firestore:"supersededBy,omitempty"`
	Vec             []byte     `firestore:"vec,omitempty"` // live facts only (packVector)
}

// GetUser reads the memory document and its live facts in one round trip.
func (db *DB) GetUser(ctx context.Context, userID string) (*longterm.User, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.client.GetAll(ctx, []*firestore.DocumentRef{db.memoryRef(userID), db.liveFactsRef(userID)})
	if err != nil {
		return nil, translate(err)
	}
	u, err := decodeMemoryUser(snaps[0], userID)
	if err != nil {
		return nil, err
	}
	u.Partial = false // read whole: without a facts document, it has none, or holds them itself
	if snaps[1].Exists() {
		u.Facts, err = decodeLiveFacts(snaps[1])
	}
	return u, err
}

// LiveFacts reads the live facts' document alone.
func (db *DB) LiveFacts(ctx context.Context, userID string) ([]longterm.Fact, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snap, err := db.liveFactsRef(userID).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, translate(err)
	}
	return decodeLiveFacts(snap)
}

func decodeLiveFacts(snap *firestore.DocumentSnapshot) ([]longterm.Fact, error) {
	var d liveFactsDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	out := make([]longterm.Fact, 0, len(d.Facts))
	for _, f := range d.Facts {
		out = append(out, fromFactDoc(f))
	}
	return out, nil
}

// decodeMemoryUser decodes the memory document: Partial (its live facts
// not read) unless there is none yet or it holds them itself, as
// documents written before they had one of their own do.
func decodeMemoryUser(snap *firestore.DocumentSnapshot, userID string) (*longterm.User, error) {
	if !snap.Exists() {
		return &longterm.User{UserID: userID}, nil
	}
	var d memoryUserDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	u := &longterm.User{UserID: userID, Disabled: d.Disabled, Block: d.Block, BlockTokens: d.BlockTokens,
		BlockCut: d.BlockCut, StableAt: d.StableAt.UTC(), VectorModel: d.VectorModel, Version: d.Version, UpdatedAt: d.UpdatedAt.UTC(),
		Profile: longterm.Profile{Work: lp(d.Work), Personal: lp(d.Personal), Focus: lp(d.Focus)}, History: historyUTC(d.History),
		Partial: d.Facts == nil, Filed: d.Filed == nil || *d.Filed}
	for _, f := range d.Facts {
		u.Facts = append(u.Facts, fromFactDoc(f))
	}
	return u, nil
}

// lp is a profile field as read: its time in UTC.
func lp(p longterm.ProfileField) longterm.ProfileField {
	p.UpdatedAt = utc(p.UpdatedAt)
	return p
}

func (db *DB) ListSuperseded(ctx context.Context, userID string) ([]longterm.Fact, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snaps, err := db.memoryRef(userID).Collection(FactsCollection).Documents(ctx).GetAll()
	if err != nil {
		return nil, translate(err)
	}
	out := make([]longterm.Fact, 0, len(snaps))
	for _, snap := range snaps {
		var d factDoc
		if err := snap.DataTo(&d); err != nil {
			return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
		}
		out = append(out, fromFactDoc(d))
	}
	return out, nil
}

func fromFactDoc(d factDoc) longterm.Fact {
	f := longterm.Fact{ID: d.ID, UserID: d.UserID, Content: d.Content, Category: longterm.Category(d.Category),
		Confidence: d.Confidence, CreatedAt: d.CreatedAt.UTC(),
		LastConfirmedAt: d.LastConfirmedAt.UTC(), InvalidAt: utc(d.InvalidAt), SupersededBy: d.SupersededBy, Vector: unpackVector(d.Vec)}
	if len(d.Sources) > 0 {
		f.Sources = d.Sources
	}
	if len(f.Sources) == 0 && d.SessionID != "" {
		f.Sources = []longterm.Source{{SessionID: d.SessionID, StartSeq: d.StartSeq, EndSeq: d.EndSeq}}
	}
	return f
}

// SaveMemory reads the source sessions in its transaction: a purge, which
// deletes the session document in a transaction of its own, either comes
// after the save (and forgets what it saved) or makes it fail.
func (db *DB) SaveMemory(ctx context.Context, userID string, version int64, u *longterm.User, c longterm.Change) error {
	ref := db.memoryRef(userID)
	facts := ref.Collection(FactsCollection)
	return db.runTx(ctx, func(ctx context.Context, tx *firestore.Transaction) error {
		// The source sessions and the memory document, in one read.
		refs := make([]*firestore.DocumentRef, 0, len(c.Sources)+1)
		for _, id := range c.Sources {
			refs = append(refs, db.sessionRef(id))
		}
		snaps, err := tx.GetAll(append(refs, ref))
		if err != nil {
			return err
		}
		if err := sourcesOf(userID, snaps[:len(c.Sources)]); err != nil {
			return err
		}
		snap := snaps[len(c.Sources)]
		cur, inline, filed := memoryAsStored(snap)
		filed = filed || len(c.File) > 0
		if cur != version {
			return errs.Errorf(errs.ECONFLICT, "memory changed meanwhile")
		}
		if err := db.recordStart(tx, snap, userID, u.UpdatedAt); err != nil {
			return err
		}
		for _, f := range c.File {
			if err := tx.Set(facts.Doc(f.ID), toFactDoc(userID, f)); err != nil {
				return err
			}
		}
		for _, id := range c.Drop {
			if err := tx.Delete(facts.Doc(id)); err != nil {
				return err
			}
		}
		d := memoryUserDoc{UserID: userID, Disabled: u.Disabled, Work: u.Profile.Work, Personal: u.Profile.Personal,
			Focus: u.Profile.Focus, Block: u.Block, BlockTokens: u.BlockTokens, BlockCut: u.BlockCut, StableAt: u.StableAt, VectorModel: u.VectorModel,
			Version: version + 1, UpdatedAt: u.UpdatedAt,
			History: u.History, HistoryDueAt: orNull(u.History.DueAt(u.UpdatedAt)), Filed: &filed}
		if err := tx.Set(ref, d); err != nil {
			return err
		}
		if c.KeepFacts && !inline {
			return nil
		}
		live := liveFactsDoc{UserID: userID, Facts: make([]factDoc, 0, len(u.Facts))}
		for _, f := range u.Facts {
			fd := toFactDoc(userID, f)
			fd.Vec = packVector(f.Vector)
			live.Facts = append(live.Facts, fd)
		}
		return tx.Set(db.liveFactsRef(userID), live)
	})
}

// memoryAsStored is what a save needs of the memory document as stored (snap):
// its version, whether it holds the live facts itself (an earlier
// layout's: the save moves them), and whether superseded facts may be
// filed (a document written before it kept that may have some).
func memoryAsStored(snap *firestore.DocumentSnapshot) (version int64, inline, filed bool) {
	if !snap.Exists() {
		return 0, false, false
	}
	v, _ := snap.DataAt("version")
	version, _ = v.(int64)
	_, err := snap.DataAt("facts")
	was, absent := snap.DataAt("filed")
	return version, err == nil, absent != nil || was != false
}

// recordStart records userID as seen at at in tx if their memory
// document (snap) does not exist yet: PATCH /memory/profile may be a
// user's first request (see retention.Backstop).
func (db *DB) recordStart(tx *firestore.Transaction, snap *firestore.DocumentSnapshot, userID string, at time.Time) error {
	if snap.Exists() {
		return nil
	}
	return tx.Set(db.accountRef(userID), accountDoc{UserID: userID, SeenAt: at})
}

// sourcesOf checks that the sessions a change of memory was learned from
// (snaps) are still there, and still userID's.
func sourcesOf(userID string, snaps []*firestore.DocumentSnapshot) error {
	for _, s := range snaps {
		if !s.Exists() {
			return longterm.ErrSourceGone
		}
		if owner, _ := s.DataAt("userId"); owner != userID {
			return longterm.ErrSourceGone
		}
	}
	return nil
}

func toFactDoc(userID string, f longterm.Fact) factDoc {
	d := factDoc{ID: f.ID, UserID: userID, Content: f.Content, Category: string(f.Category), Confidence: f.Confidence,
		Sources: f.Sources, CreatedAt: f.CreatedAt,
		LastConfirmedAt: f.LastConfirmedAt, InvalidAt: f.InvalidAt, SupersededBy: f.SupersededBy}
	if d.Sources == nil {
		d.Sources = []longterm.Source{}
	}
	return d
}

func (db *DB) EraseMemory(ctx context.Context, userID string) (int, error) {
	ref := db.memoryRef(userID)
	n, err := db.deleteUnder(ctx, ref)
	if err != nil {
		return n, err
	}
	ctx, cancel := db.op(ctx)
	defer cancel()
	if _, err := ref.Get(ctx); status.Code(err) == codes.NotFound {
		return n, nil
	}
	if _, err := ref.Delete(ctx); err != nil {
		return n, translate(err)
	}
	return n + 1, nil
}
