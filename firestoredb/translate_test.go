package firestoredb

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chatmemory/backend/kernel/errs"
)

// TestTranslate: Firestore's codes become the application's; a request
// Firestore refuses as malformed is the caller's (400), not an outage.
func TestTranslate(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		want errs.Code
	}{
		"NotFound":        {status.Error(codes.NotFound, "no"), errs.ENOTFOUND},
		"AlreadyExists":   {status.Error(codes.AlreadyExists, "no"), errs.ECONFLICT},
		"InvalidArgument": {status.Error(codes.InvalidArgument, `Document name "x/__x__" lacks "/" at index 5.`), errs.EINVALID},
		"Aborted":         {status.Error(codes.Aborted, "contention"), errs.EUNAVAILABLE},
		"Unavailable":     {status.Error(codes.Unavailable, "down"), errs.EUNAVAILABLE},
		"Internal":        {status.Error(codes.Internal, "oops"), errs.EUNAVAILABLE},
		"Domain":          {errs.Errorf(errs.ECONFLICT, "busy"), errs.ECONFLICT},
	} {
		t.Run(name, func(t *testing.T) {
			if got := errs.CodeOf(translate(tc.err)); got != tc.want {
				t.Errorf("translate(%v) is %s, want %s", tc.err, got, tc.want)
			}
		})
	}
}
