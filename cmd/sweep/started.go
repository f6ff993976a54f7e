package main

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// processStart is when the kernel started this process, so that the
// report's total includes the runtime's start and its packages' set-up
// (read from /proc on Linux, to the kernel's 10 ms tick), or, where that
// cannot be read, when main's package was set up.
func processStart(fallback time.Time) time.Time {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return fallback
	}
	uptime, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return fallback
	}
	now := time.Now()
	// The command's name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis; starttime is field 22 of the
	// whole line, the 20th after it.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	up := strings.Fields(string(uptime))
	if len(fields) < 20 || len(up) == 0 {
		return fallback
	}
	ticks, err1 := strconv.ParseFloat(fields[19], 64)
	upSeconds, err2 := strconv.ParseFloat(up[0], 64)
	if err1 != nil || err2 != nil {
		return fallback
	}
	const userHZ = 100 // clock ticks a second, as the kernel reports them to every program
	age := time.Duration((upSeconds - ticks/userHZ) * float64(time.Second))
	if age < 0 || age > now.Sub(fallback)+time.Minute {
		return fallback
	}
	return now.Add(-age)
}
