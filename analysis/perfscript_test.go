package analysis

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// perfScriptEvents reads a perf.data file through the installed perf
// (`perf script`), an event source independent of replay's own reader, so
// the analysis can be checked against perf's outputs by perf's decoding.
// The test-only parser understands the sched and task tracepoints.
func perfScriptEvents(path string) ([]timeline.Event, error) {
	cmd := exec.Command("perf", "script", "-i", path, "--ns", "-F", "comm,tid,pid,cpu,time,event,trace")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	evs, perr := parsePerfScript(out)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("perf script %s: %w", path, err)
	}
	return evs, perr
}

var (
	scriptLine = regexp.MustCompile(`^\s*(.*?)\s+(-?\d+)/(-?\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{9}):\s+(\S+):\s?(.*)$`)
	scriptKey  = regexp.MustCompile(`(?:^|\s)([a-z_]+)=`)
)

// prevStateRaw maps the state letters of a 6.x kernel's sched_switch
// print format back to the raw value.
var prevStateRaw = map[string]int64{"R": 0, "S": 1, "D": 2, "T": 4, "t": 8, "X": 16, "Z": 32, "P": 64, "I": 128, "R+": 256}

func parsePerfScript(r io.Reader) ([]timeline.Event, error) {
	var evs []timeline.Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := scriptLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name := m[7]
		if i := strings.IndexByte(name, ':'); i >= 0 {
			name = timeline.EventName(name[:i], name[i+1:])
		}
		var e timeline.Event
		sec, _ := strconv.ParseInt(m[5], 10, 64)
		nsec, _ := strconv.ParseInt(m[6], 10, 64)
		e.Time = sec*1e9 + nsec
		e.Name, e.Kind = name, timeline.KindOf(name)
		pid, _ := strconv.ParseInt(m[2], 10, 32) // perf prints pid/tid
		tid, _ := strconv.ParseInt(m[3], 10, 32)
		cpu, _ := strconv.ParseInt(m[4], 10, 32)
		e.SetInt(timeline.CPU, cpu)
		e.SetInt(timeline.CommonPID, tid)
		e.SetInt(timeline.CommonTGID, pid)
		e.SetStr(timeline.CommonComm, m[1])
		body := strings.ReplaceAll(strings.ReplaceAll(m[8], " [ns]", ""), " ==>", "")
		keys := scriptKey.FindAllStringSubmatchIndex(body, -1)
		for i, k := range keys {
			end := len(body)
			if i+1 < len(keys) {
				end = keys[i+1][0]
			}
			key, val := body[k[2]:k[3]], strings.TrimSpace(body[k[1]:end])
			c, ok := timeline.LookupCol(key)
			if !ok {
				continue
			}
			if c.IsString() {
				e.SetStr(c, val)
				if c == timeline.PrevState {
					if raw, ok := prevStateRaw[val]; ok {
						e.SetInt(timeline.PrevStateRaw, raw)
					}
				}
				continue
			}
			if val == "true" || val == "false" {
				e.SetInt(c, map[bool]int64{true: 1}[val == "true"])
				continue
			}
			v, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: field %s: %v", sc.Text(), key, err)
			}
			e.SetInt(c, v)
		}
		evs = append(evs, e)
	}
	return evs, sc.Err()
}

func havePerf() bool {
	_, err := exec.LookPath("perf")
	return err == nil
}

// TestOraclesViaPerfScript decodes each real trace with perf itself and
// checks the analysis against perf's timehist and latency outputs.
func TestOraclesViaPerfScript(t *testing.T) {
	if !havePerf() {
		t.Skip("perf not installed")
	}
	for _, c := range oracleCases(t) {
		t.Run(c.name, func(t *testing.T) {
			evs, err := perfScriptEvents(c.unpacked(t))
			if err != nil {
				t.Fatal(err)
			}
			checkOracle(t, c, &timeline.SliceReader{Events: evs})
		})
	}
}
