package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// vars reads settings from the environment and notes every one that is
// malformed, so a configuration reports all its problems at once.
type vars struct {
	getenv   func(string) string
	problems []string
}

// err is every problem noted, or nil.
func (v *vars) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return errors.New("configuration:\n  - " + strings.Join(v.problems, "\n  - "))
}

// exporter reads where telemetry goes: off, stdout, or cloud (Google
// Cloud's own, the default there).
func (v *vars) exporter(name, cloud string, onGoogleCloud bool) string {
	def := TracesOff // "off" for both
	if onGoogleCloud {
		def = cloud
	}
	s := v.str(name, def)
	if s != TracesOff && s != TracesStdout && s != cloud {
		v.bad("%s must be off, stdout or %s, not %q", name, cloud, s)
	}
	return s
}

// seconds reads a duration in whole seconds, from lo to hi.
func (v *vars) seconds(name string, def time.Duration, lo, hi int) time.Duration {
	return time.Duration(v.num(name, int(def/time.Second), lo, hi)) * time.Second
}

// ratio reads a number from 0 to 1.
func (v *vars) ratio(name string, def float64) float64 {
	s := v.getenv(name)
	if s == "" {
		return def
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || !(r >= 0 && r <= 1) {
		v.bad("%s must be a number from 0 to 1, not %q", name, s)
		return def
	}
	return r
}

// list reads a comma-separated list, leaving out blank items.
func (v *vars) list(name string) []string {
	var out []string
	for _, item := range strings.Split(v.getenv(name), ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// onOff reads a switch: on or off.
func (v *vars) onOff(name string, def bool) bool {
	switch s := strings.TrimSpace(v.getenv(name)); s {
	case "":
		return def
	case "on":
		return true
	case "off":
		return false
	default:
		v.bad("%s must be on or off, not %q", name, s)
		return def
	}
}

// num reads a whole number from lo to hi.
func (v *vars) num(name string, def, lo, hi int) int {
	s := strings.TrimSpace(v.getenv(name))
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		v.bad("%s must be a whole number from %d to %d, not %q", name, lo, hi, s)
		return def
	}
	return n
}

// str is the variable name, trimmed, or def when it is unset or blank.
func (v *vars) str(name, def string) string {
	if s := strings.TrimSpace(v.getenv(name)); s != "" {
		return s
	}
	return def
}

func (v *vars) bad(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}
