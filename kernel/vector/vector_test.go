package vector

import (
	"math"
	"testing"
)

func TestCosine(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float32
		want float64
	}{
		{"same direction", []float32{1, 2}, []float32{2, 4}, 0},
		{"orthogonal", []float32{1, 0}, []float32{0, 3}, 1},
		{"opposite", []float32{1, 0}, []float32{-1, 0}, 2},
		{"zero", []float32{0, 0}, []float32{1, 0}, 1},
		{"lengths differ", []float32{1, 0}, []float32{1, 0, 0}, 1},
		{"60 degrees", []float32{1, 0}, []float32{0.5, float32(math.Sqrt(3) / 2)}, 0.5},
	} {
		if got := Cosine(tc.a, tc.b); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
