package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

var (
	white     = color.RGBA{255, 255, 255, 255}
	ink       = color.RGBA{40, 40, 40, 255}
	grid      = color.RGBA{225, 225, 225, 255}
	projectC  = color.RGBA{25, 118, 210, 255}
	baselineC = color.RGBA{229, 57, 53, 255}
)

// Chart draws reads per turn (log scale) and p50 latency per turn (over
// windows of ten turns) against turn number, for both designs.
func (r *Report) Chart() image.Image {
	const W, H = 1000, 760
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	draw.Draw(img, img.Bounds(), &image.Uniform{white}, image.Point{}, draw.Src)
	text(img, 20, 24, ink, "Firestore reads per turn and backend-path latency as the conversation grows (Firestore emulator; "+fmt.Sprint(r.Config.Turns)+" turns)")
	reads := func(s Side) []float64 {
		out := make([]float64, len(s.Samples))
		for i, x := range s.Samples {
			out[i] = float64(x.Reads)
		}
		return out
	}
	p50 := func(s Side) []float64 {
		out := make([]float64, len(s.Samples))
		for i := range s.Samples {
			lo := max(0, i-9)
			var w []float64
			for _, x := range s.Samples[lo : i+1] {
				w = append(w, x.LatencyMs)
			}
			out[i] = percentile(w, 50)
		}
		return out
	}
	panel(img, image.Rect(70, 50, W-30, 380), "documents read per turn (log scale)", true,
		[][]float64{reads(r.Project), reads(r.Baseline)})
	panel(img, image.Rect(70, 420, W-30, 720), "backend-path latency per turn, p50 of the last 10 turns (ms)", false,
		[][]float64{p50(r.Project), p50(r.Baseline)})
	text(img, 80, H-14, projectC, "-- this backend")
	text(img, 220, H-14, baselineC, "-- baseline: whole history read every turn")
	return img
}

func panel(img *image.RGBA, rc image.Rectangle, title string, logY bool, series [][]float64) {
	hi, n := 0.0, 0
	for _, s := range series {
		n = max(n, len(s))
		for _, v := range s {
			hi = math.Max(hi, v)
		}
	}
	if n < 2 || hi <= 0 {
		return
	}
	y := func(v float64) int {
		f := v / hi
		if logY {
			f = math.Log10(1+v) / math.Log10(1+hi)
		}
		return rc.Max.Y - int(f*float64(rc.Dy()))
	}
	x := func(i int) int { return rc.Min.X + i*rc.Dx()/(n-1) }
	text(img, rc.Min.X, rc.Min.Y-6, ink, title)
	// Grid and labels.
	ticks := []float64{0, hi / 4, hi / 2, 3 * hi / 4, hi}
	if logY {
		ticks = nil
		for v := 1.0; v <= hi*1.01; v *= 10 {
			ticks = append(ticks, v)
		}
		ticks = append(ticks, hi)
	}
	for _, t := range ticks {
		yy := y(t)
		hline(img, rc.Min.X, rc.Max.X, yy, grid)
		text(img, 8, yy+4, ink, short(t))
	}
	for _, f := range []float64{0, 0.25, 0.5, 0.75, 1} {
		i := int(f * float64(n-1))
		text(img, x(i)-10, rc.Max.Y+16, ink, fmt.Sprint(i+1))
	}
	hline(img, rc.Min.X, rc.Max.X, rc.Max.Y, ink)
	for i := rc.Min.Y; i <= rc.Max.Y; i++ {
		img.Set(rc.Min.X, i, ink)
	}
	for k, s := range series {
		c := []color.RGBA{projectC, baselineC}[k%2]
		for i := 1; i < len(s); i++ {
			line(img, x(i-1), y(s[i-1]), x(i), y(s[i]), c)
		}
	}
}

func short(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0fk", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.1f", v)
	}
}

func text(img *image.RGBA, x, y int, c color.Color, s string) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func hline(img *image.RGBA, x0, x1, y int, c color.Color) {
	for x := x0; x <= x1; x++ {
		img.Set(x, y, c)
	}
}

// line draws with Bresenham's algorithm, two pixels thick.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		img.Set(x0, y0, c)
		img.Set(x0, y0+1, c)
		if x0 == x1 && y0 == y1 {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			x0 += sx
		}
		if e2 <= dx {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}
