package firestoredb

import (
	"encoding/binary"
	"math"
)

// packVector stores a vector in a quarter of its size: its largest
// magnitude as a float32, then each component as a signed byte of it.
// Cosine similarities of unit vectors move by well under 0.01, which
// ranking and a merge threshold of 0.9 do not feel; a 512-dimension fact
// takes 516 bytes of the one memory document a turn reads.
func packVector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	var scale float32
	for _, x := range v {
		scale = max(scale, float32(math.Abs(float64(x))))
	}
	out := make([]byte, 4+len(v))
	binary.LittleEndian.PutUint32(out, math.Float32bits(scale))
	for i, x := range v {
		if scale > 0 {
			out[4+i] = byte(int8(math.Round(float64(x / scale * 127))))
		}
	}
	return out
}

// unpackVector reads what packVector wrote (nil for anything else).
func unpackVector(b []byte) []float32 {
	if len(b) < 5 {
		return nil
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
	out := make([]float32, len(b)-4)
	for i, c := range b[4:] {
		out[i] = float32(int8(c)) / 127 * scale
	}
	return out
}
