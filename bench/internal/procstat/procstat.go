// Package procstat reads per-process CPU time and memory from Linux /proc, so the
// benchmark can charge CPU to Herald, MariaDB and Redis separately. It only reads
// files, except ResetPeakRSS, which writes the caller's own child's clear_refs.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ClockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. It is 100
// on every Linux architecture Go supports.
const ClockTicks = 100

// ErrNotFound is returned by FindByComm when no process has one of the names.
var ErrNotFound = errors.New("process not found")

// CPU returns the user plus system CPU time that process pid (all its threads) has
// used so far, read from fields 14 and 15 of /proc/<pid>/stat.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// comm (field 2) may hold spaces and parentheses: fields resume after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("parse /proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so utime (14) is f[11] and stime (15) is f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ut+st) * time.Second / ClockTicks, nil
}

// PeakRSS returns VmHWM from /proc/<pid>/status, the peak resident set in bytes since
// the process started or since the last ResetPeakRSS.
func PeakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmHWM of %d: %w", pid, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// ResetPeakRSS sets VmHWM back to the current RSS (writes "5" to clear_refs, Linux ≥ 4.0).
func ResetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// FindByComm returns the lowest pid whose /proc/<pid>/comm equals one of names.
func FindByComm(names ...string) (int, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	best := 0
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/comm")
		if err != nil {
			continue
		}
		comm := strings.TrimSpace(string(b))
		for _, n := range names {
			if comm == n {
				pid, err := strconv.Atoi(filepath.Base(d))
				if err == nil && (best == 0 || pid < best) {
					best = pid
				}
			}
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("%w: %s", ErrNotFound, strings.Join(names, ", "))
	}
	return best, nil
}

// Machine returns the CPU time all CPUs spent busy and in total since boot, summed
// from the "cpu" line of /proc/stat (busy = total − idle − iowait).
func Machine() (busy, total time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("parse /proc/stat: %q", line)
	}
	var sum, idle int64
	// user nice system idle iowait irq softirq steal (guest time is already in user).
	for i, s := range f[1:min(len(f), 9)] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parse /proc/stat: %w", err)
		}
		sum += v
		if i == 3 || i == 4 {
			idle += v
		}
	}
	tick := time.Second / ClockTicks
	return time.Duration(sum-idle) * tick, time.Duration(sum) * tick, nil
}
