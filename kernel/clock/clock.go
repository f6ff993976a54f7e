// Package clock reads time as the backend stores it. Services take their
// clock as a func() time.Time field, so tests can stand at any instant
// (see clocktest).
package clock

import "time"

// Stored returns now() as stored: UTC, to the microsecond (Firestore's
// precision), so both stores agree exactly.
func Stored(now func() time.Time) time.Time {
	return now().UTC().Truncate(time.Microsecond)
}
