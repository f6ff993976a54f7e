package bench

import (
	"bytes"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
)

// Write saves the report in dir: bench.json, bench.md (the tables) and
// bench.png (the chart).
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The fusion grid's first trials only, as bench.md prints them (the
	// whole grid is hundreds: bench.json stays under the repository's 1 MiB).
	out := struct {
		*Report
		Ratios      []Ratio       `json:"ratios"`
		Calibration []FusionTrial `json:"fusionCalibration"`
	}{r, r.Ratios(), r.Calibration[:min(len(r.Calibration), shownTrials)]}
	js, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bench.json"), js, 0o644); err != nil {
		return err
	}
	var md bytes.Buffer
	r.WriteTable(&md)
	if err := os.WriteFile(filepath.Join(dir, "bench.md"), md.Bytes(), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "bench.png"))
	if err != nil {
		return err
	}
	if err := png.Encode(f, r.Chart()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
