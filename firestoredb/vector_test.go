package firestoredb

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chatmemory/backend/kernel/vector"
)

// TestPackVector: a packed vector keeps its direction (cosine similarities
// between random unit vectors move by under 0.01) and its length in bytes
// is a quarter plus 4; nothing and garbage read as nil.
func TestPackVector(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	unit := func(n int) []float32 {
		v := make([]float32, n)
		var norm float64
		for i := range v {
			v[i] = float32(r.NormFloat64())
			norm += float64(v[i] * v[i])
		}
		for i := range v {
			v[i] /= float32(math.Sqrt(norm))
		}
		return v
	}
	for range 200 {
		a, b := unit(512), unit(512)
		// Near pairs too: b close to a.
		if r.IntN(2) == 0 {
			for i := range b {
				b[i] = a[i] + b[i]*0.3
			}
		}
		pa, pb := packVector(a), packVector(b)
		if len(pa) != 516 {
			t.Fatalf("%d bytes", len(pa))
		}
		if d := math.Abs(vector.Cosine(a, b) - vector.Cosine(unpackVector(pa), unpackVector(pb))); d > 0.01 {
			t.Fatalf("cosine moved by %v", d)
		}
	}
	if packVector(nil) != nil || unpackVector(nil) != nil || unpackVector([]byte{1, 2}) != nil {
		t.Fatal("empty vectors")
	}
	if got := unpackVector(packVector([]float32{0, 0})); len(got) != 2 || got[0] != 0 {
		t.Fatalf("zero vector: %v", got)
	}
}
