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

// Long-term memory lives under users/{uid}: the memory document and its
// facts subcollection.
const (
	UsersCollection = "users"
	FactsCollection = "facts"
)

// memoryUserDoc is users/{uid}: the live facts live in it (at most the
// cap of short sentences), so a turn or an extraction reads one document;
// superseded facts are filed in its facts subcollection, for audit.
type memoryUserDoc struct {
	UserID      string                `firestore:"userId"`
	Disabled    bool                  `firestore:"disabled"`
	Facts       []factDoc             `firestore:"facts"`
	Work        longterm.ProfileField `firestore:"work"`
	Personal    longterm.ProfileField `firestore:"personal"`
	Focus       longterm.ProfileField `firestore:"focus"`
	Block       string                `firestore:"block"`
	BlockTokens int                   `firestore:"blockTokens"`
	BlockCut    bool                  `firestore:"blockCut,omitempty"`
	VectorModel string                `firestore:"vectorModel,omitempty"`
	// History is the episodic history (exempt from indexing);
	// historyDueAt, when it next has something to move, which the daily
	// roll-up queries.
	History      longterm.History `firestore:"history"`
	HistoryDueAt *time.Time       `firestore:"historyDueAt"`
	Version      int64            `firestore:"version"`
	UpdatedAt    time.Time        `firestore:"updatedAt"`
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

func toFactDoc(userID string, f longterm.Fact) factDoc {
	d := factDoc{ID: f.ID, UserID: userID, Content: f.Content, Category: string(f.Category), Confidence: f.Confidence,
		Sources: f.Sources, CreatedAt: f.CreatedAt,
		LastConfirmedAt: f.LastConfirmedAt, InvalidAt: f.InvalidAt, SupersededBy: f.SupersededBy}
	if d.Sources == nil {
		d.Sources = []longterm.Source{}
	}
	return d
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

func (db *DB) memoryRef(userID string) *firestore.DocumentRef {
	return db.client.Collection(UsersCollection).Doc(UserDocID(userID))
}

// lp is a profile field as read: its time in UTC.
func lp(p longterm.ProfileField) longterm.ProfileField {
	p.UpdatedAt = utc(p.UpdatedAt)
	return p
}

func (db *DB) GetUser(ctx context.Context, userID string) (*longterm.User, error) {
	ctx, cancel := db.op(ctx)
	defer cancel()
	snap, err := db.memoryRef(userID).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return &longterm.User{UserID: userID}, nil
	}
	if err != nil {
		return nil, translate(err)
	}
	return decodeMemoryUser(snap, userID)
}

func decodeMemoryUser(snap *firestore.DocumentSnapshot, userID string) (*longterm.User, error) {
	if !snap.Exists() {
		return &longterm.User{UserID: userID}, nil
	}
	var d memoryUserDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, errs.Wrap(errs.EINTERNAL, err, "internal error")
	}
	u := &longterm.User{UserID: userID, Disabled: d.Disabled, Block: d.Block, BlockTokens: d.BlockTokens,
		BlockCut: d.BlockCut, VectorModel: d.VectorModel, Version: d.Version, UpdatedAt: d.UpdatedAt.UTC(),
		Profile: longterm.Profile{Work: lp(d.Work), Personal: lp(d.Personal), Focus: lp(d.Focus)}, History: historyUTC(d.History)}
	for _, f := range d.Facts {
		u.Facts = append(u.Facts, fromFactDoc(f))
	}
	return u, nil
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
		for _, s := range snaps[:len(c.Sources)] {
			if !s.Exists() {
				return longterm.ErrSourceGone
			}
			if owner, _ := s.DataAt("userId"); owner != userID {
				return longterm.ErrSourceGone
			}
		}
		snap := snaps[len(c.Sources)]
		cur := int64(0)
		if snap.Exists() {
			v, _ := snap.DataAt("version")
			cur, _ = v.(int64)
		}
		if cur != version {
			return errs.Errorf(errs.ECONFLICT, "memory changed meanwhile")
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
			Focus: u.Profile.Focus, Block: u.Block, BlockTokens: u.BlockTokens, BlockCut: u.BlockCut, VectorModel: u.VectorModel,
			Version: version + 1, UpdatedAt: u.UpdatedAt, Facts: make([]factDoc, 0, len(u.Facts)),
			History: u.History, HistoryDueAt: orNull(u.History.DueAt(u.UpdatedAt))}
		for _, f := range u.Facts {
			fd := toFactDoc(userID, f)
			fd.Vec = packVector(f.Vector)
			d.Facts = append(d.Facts, fd)
		}
		return tx.Set(ref, d)
	})
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
