// Package vector holds the arithmetic of embeddings.
package vector

import "math"

// Cosine is the cosine distance of two vectors of one length (1 - their
// cosine similarity); 1 when either is zero or their lengths differ.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 1
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 1
	}
	return 1 - dot/math.Sqrt(na*nb)
}
