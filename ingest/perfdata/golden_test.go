package perfdata

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/schedreplay/replay/timeline"
)

// The golden tests compare our rows with what perf itself prints for the
// same files. The goldens are committed beside the fixtures (gzipped text)
// so the comparison runs without perf; TestGoldensMatchPerf re-runs perf
// when it is installed and checks the goldens are still what it prints.
// Regenerate them with: go test ./ingest/perfdata -run TestGoldensMatchPerf -update

var update = flag.Bool("update", false, "rewrite the perf goldens in fixtures/perf with the installed perf")

type goldenFixture struct {
	name   string
	stats  bool // perf report --stats golden (perf 6.1 cannot do it for pipe files)
	chains bool // callchain golden from perf script -D
	// fields overrides perf script -F (files whose samples have no CPU or
	// no tracepoints).
	fields string
}

const publicFields = "comm,tid,pid,time,event"

var goldenFixtures = []goldenFixture{
	{name: "perf_sched_record.data", stats: true},
	{name: "perf_sched_pipe.data"},
	{name: "perf_sched_zstd.data", stats: true},
	{name: "hackbench.data", stats: true},
	{name: "stressng.data", stats: true},
	{name: "hackbench_callchain.data", stats: true, chains: true},
	{name: "hackbench_pipe.data"},
	{name: "hackbench_zstd.data", stats: true},
	// System-call tracepoints beside the sched ones (sys_enter_write's fd,
	// buf and count; sys_exit_read's ret): fields with no typed column.
	{name: "hackbench_syscalls.data", stats: true},
	{name: "hackbench_lost.data", stats: true},
	// Public files perf 6.1 can read (the linux-perf-data ones have
	// 136-byte attrs, which it refuses): non-tracepoint samples, switch
	// events, LOST_SAMPLES, pipe mode of perf 4.14 to 6.12.
	{name: "public/perf_data_converter/perf.data.ctx_switch_namespaces-4.14", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.forkexit-3.8", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.group_desc-4.14", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.hybrid_topology", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.lost_samples-4.4", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.piped.ctx_switch_namespaces-4.14", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.piped.header_features_aligned-6.12", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.piped.header_feautres_group_desc-6.8", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.piped.no_attr_ids-4.14", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.raw-3.4", stats: true, fields: publicFields},
	{name: "public/perf_data_converter/perf.data.singleprocess-3.4", stats: true, fields: publicFields},
}

func repoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(wd, "..", "..")
}

func fixturePath(name string) string { return filepath.Join(repoRoot(), "fixtures", "perf", name) }

// sharedDir is the project's shared folder (../shared next to the repo);
// tests that use it skip when it is absent.
func sharedDir(t testing.TB) string {
	d := filepath.Join(repoRoot(), "..", "shared")
	if _, err := os.Stat(d); err != nil {
		t.Skipf("%s not present", d)
	}
	return d
}

// The perf commands behind the goldens.
func perfScriptArgs(path, fields string) []string {
	if fields == "" {
		fields = "comm,tid,pid,cpu,time,event,trace"
	}
	return []string{"script", "--force", "--ns", "-F", fields,
		"--show-task-events", "--show-lost-events", "--show-switch-events", "-i", path}
}

func perfStatsArgs(path string) []string {
	return []string{"report", "--force", "--stats", "-i", path}
}

func perfDumpArgs(path string) []string { return []string{"script", "--force", "-D", "-i", path} }

func runPerf(args []string) ([]byte, error) {
	cmd := exec.Command("perf", args...)
	cmd.Env = append(os.Environ(), "PAGER=cat")
	var out bytes.Buffer
	cmd.Stdout = &out
	err := cmd.Run()
	return out.Bytes(), err
}

// chainsFromDump keeps, from perf script -D, each sample's cpu, time,
// pid/tid and raw callchain (context markers included), one per line.
func chainsFromDump(dump []byte) []byte {
	hdr := regexp.MustCompile(`^(\d+) (\d+) 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_SAMPLE\(.*?\): (-?\d+)/(-?\d+):`)
	entry := regexp.MustCompile(`^\.\.\.\.\. +\d+: ([0-9a-f]+)$`)
	var out bytes.Buffer
	open := false
	for _, line := range strings.Split(string(dump), "\n") {
		if m := hdr.FindStringSubmatch(line); m != nil {
			if open {
				out.WriteByte('\n')
			}
			fmt.Fprintf(&out, "%s %s %s/%s:", m[1], m[2], m[3], m[4])
			open = true
			continue
		}
		if !open {
			continue
		}
		if m := entry.FindStringSubmatch(line); m != nil {
			out.WriteString(" " + m[1])
		} else if !strings.HasPrefix(line, "... FP chain") {
			out.WriteByte('\n')
			open = false
		}
	}
	if open {
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func readGolden(t testing.TB, name string) []byte {
	b, err := os.ReadFile(fixturePath(name))
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return b
}

// TestGoldensMatchPerf checks (or with -update rewrites) the goldens
// against the installed perf.
func TestGoldensMatchPerf(t *testing.T) {
	if _, err := exec.LookPath("perf"); err != nil {
		if *update {
			t.Fatal("-update needs perf in PATH")
		}
		t.Skip("perf not installed")
	}
	ver, _ := runPerf([]string{"version"})
	for _, fx := range goldenFixtures {
		path := fixturePath(fx.name)
		type gen struct {
			file string
			args []string
			post func([]byte) []byte
		}
		gens := []gen{{fx.name + ".script.txt.gz", perfScriptArgs(path, fx.fields), nil}}
		if fx.stats {
			gens = append(gens, gen{fx.name + ".stats.txt", perfStatsArgs(path), nil})
		}
		if fx.chains {
			gens = append(gens, gen{fx.name + ".chains.txt.gz", perfDumpArgs(path), chainsFromDump})
		}
		for _, g := range gens {
			out, err := runPerf(g.args)
			if err != nil {
				t.Errorf("perf %s: %v", strings.Join(g.args, " "), err)
				continue
			}
			if g.post != nil {
				out = g.post(out)
			}
			if *update {
				data := out
				if strings.HasSuffix(g.file, ".gz") {
					data = gz(out)
				}
				if err := os.WriteFile(fixturePath(g.file), data, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want := readGolden(t, g.file)
			if !bytes.Equal(out, want) {
				a, b := strings.Split(string(want), "\n"), strings.Split(string(out), "\n")
				i := 0
				for i < len(a) && i < len(b) && a[i] == b[i] {
					i++
				}
				la, lb := "<end>", "<end>"
				if i < len(a) {
					la = a[i]
				}
				if i < len(b) {
					lb = b[i]
				}
				t.Errorf("%s is not what %s prints now (line %d):\n golden: %s\n   perf: %s\n(run go test ./ingest/perfdata -run TestGoldensMatchPerf -update)",
					g.file, strings.TrimSpace(string(ver)), i+1, la, lb)
			}
		}
	}
}

// scriptLine is one line of perf script output.
type scriptLine struct {
	no       int
	text     string
	comm     string
	pid, tid int64
	cpu      int64
	time     int64
	event    string // "sched:sched_switch", or "PERF_RECORD_COMM"...
	body     string
}

var scriptRE = regexp.MustCompile(`^\s*(.*?)\s+(-?\d+)/(-?\d+)\s+(?:\[(-?\d+)\]\s+)?(\d+)\.(\d{9}):\s+(.*)$`)

// The event name is right-aligned and followed by ": " (names themselves
// may hold ':', as in "sched:sched_switch" or "cycles:u").
var tpRE = regexp.MustCompile(`^(\S+): ?(.*)$`)

func parseScript(t *testing.T, text []byte) []scriptLine {
	var out []scriptLine
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	no := 0
	for sc.Scan() {
		no++
		line := sc.Text()
		if line == "" {
			continue
		}
		m := scriptRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("golden line %d does not parse: %q", no, line)
		}
		l := scriptLine{no: no, text: line, comm: m[1]}
		l.pid, _ = strconv.ParseInt(m[2], 10, 64)
		l.tid, _ = strconv.ParseInt(m[3], 10, 64)
		l.cpu = -1
		if m[4] != "" {
			l.cpu, _ = strconv.ParseInt(m[4], 10, 64)
		}
		sec, _ := strconv.ParseInt(m[5], 10, 64)
		ns, _ := strconv.ParseInt(m[6], 10, 64)
		l.time = sec*1e9 + ns
		rest := m[7]
		if strings.HasPrefix(rest, "PERF_RECORD_") {
			end := strings.IndexAny(rest, "(: ")
			if end < 0 {
				end = len(rest)
			}
			l.event, l.body = rest[:end], rest[end:]
		} else if mm := tpRE.FindStringSubmatch(rest); mm != nil {
			l.event, l.body = mm[1], mm[2]
		} else {
			t.Fatalf("golden line %d: no event name in %q", no, rest)
		}
		out = append(out, l)
	}
	return out
}

// rowValue finds a tracepoint field in a row: its typed column or Fields.
func rowValue(e *timeline.Event, name string) (isStr bool, s string, v int64, ok bool) {
	if c, found := timeline.LookupCol(name); found && !reservedCol(c) && e.IsSet(c) {
		if c.IsString() {
			return true, e.Str(c), 0, true
		}
		return false, "", e.Int(c), true
	}
	for _, f := range e.Fields {
		if f.Name != name {
			continue
		}
		switch f.Kind {
		case timeline.FieldString:
			return true, f.Str, 0, true
		case timeline.FieldInt, timeline.FieldUint:
			return false, "", f.Int, true
		}
	}
	return false, "", 0, false
}

func fieldStr(e *timeline.Event, name string) string {
	for _, f := range e.Fields {
		if f.Name == name {
			if f.Kind == timeline.FieldString {
				return f.Str
			}
			return strconv.FormatInt(f.Int, 10)
		}
	}
	return "<none>"
}

// printedByScript tells whether perf script (with the golden's options)
// prints a line for the row.
func printedByScript(e *timeline.Event) bool {
	switch e.Name {
	case "perf:comm", "perf:fork", "perf:exit":
		return true
	case "lost":
		return fieldStr(e, "record") == "PERF_RECORD_LOST"
	}
	return true
}

var forkExitRE = regexp.MustCompile(`^\((-?\d+):(-?\d+)\):\((-?\d+):(-?\d+)\)$`)

// compareLine checks one row against one perf script line; it returns a
// description of the first difference, and counts the fields compared.
func compareLine(r *Reader, e *timeline.Event, l *scriptLine, fieldsChecked *int) string {
	if e.Time != l.time {
		return fmt.Sprintf("time %d, perf %d", e.Time, l.time)
	}
	if l.cpu >= 0 && e.Int(timeline.CPU) != l.cpu {
		return fmt.Sprintf("cpu %d, perf %d", e.Int(timeline.CPU), l.cpu)
	}
	switch l.event {
	case "PERF_RECORD_COMM":
		if e.Name != "perf:comm" {
			return "row " + e.Name + ", perf COMM"
		}
		exec := strings.HasPrefix(l.body, " exec")
		if exec != (fieldStr(e, "exec") == "1") {
			return fmt.Sprintf("exec flag %v, perf %v", !exec, exec)
		}
		b := strings.TrimPrefix(strings.TrimPrefix(l.body, " exec"), ": ")
		k := strings.LastIndexByte(b, ':')
		want := fmt.Sprintf("%s:%d/%d", e.Str(timeline.Comm), e.Int(timeline.CommonTGID), e.Int(timeline.CommonPID))
		if k < 0 || b != want {
			return fmt.Sprintf("comm %q, perf %q", want, b)
		}
		*fieldsChecked += 4
	case "PERF_RECORD_FORK", "PERF_RECORD_EXIT":
		m := forkExitRE.FindStringSubmatch(l.body)
		if m == nil {
			return "unparsed " + l.body
		}
		var got string
		if l.event == "PERF_RECORD_FORK" {
			if e.Name != "perf:fork" {
				return "row " + e.Name + ", perf FORK"
			}
			got = fmt.Sprintf("(%s:%d):(%s:%d)", fieldStr(e, "pid"), e.Int(timeline.ChildPID), fieldStr(e, "ppid"), e.Int(timeline.ParentPID))
		} else {
			if e.Name != "perf:exit" {
				return "row " + e.Name + ", perf EXIT"
			}
			got = fmt.Sprintf("(%s:%d):(%s:%s)", fieldStr(e, "tgid"), e.Int(timeline.PID), fieldStr(e, "ppid"), fieldStr(e, "ptid"))
		}
		if got != l.body {
			return fmt.Sprintf("%s, perf %s", got, l.body)
		}
		*fieldsChecked += 4
	case "PERF_RECORD_SWITCH", "PERF_RECORD_SWITCH_CPU_WIDE":
		if e.Name != "perf:switch" {
			return "row " + e.Name + ", perf " + l.event
		}
		want := "IN"
		if fieldStr(e, "out") == "1" {
			want = "OUT"
			if fieldStr(e, "preempt") == "1" {
				want = "OUT preempt"
			}
		}
		got := strings.TrimSpace(l.body)
		if l.event == "PERF_RECORD_SWITCH_CPU_WIDE" {
			dir := "prev"
			if want != "IN" {
				dir = "next"
			}
			want = fmt.Sprintf("%s  %s pid/tid: %5s/%-5s", want, dir, fieldStr(e, "next_prev_pid"), fieldStr(e, "next_prev_tid"))
			got = strings.TrimSpace(l.body)
			want = strings.TrimSpace(want)
		}
		if got != want {
			return fmt.Sprintf("switch %q, perf %q", want, got)
		}
		if e.Int(timeline.CommonPID) != l.tid || e.Int(timeline.CommonTGID) != l.pid {
			return fmt.Sprintf("switch task %d/%d, perf %d/%d", e.Int(timeline.CommonTGID), e.Int(timeline.CommonPID), l.pid, l.tid)
		}
		*fieldsChecked += 3
	case "PERF_RECORD_LOST":
		if e.Name != "lost" {
			return "row " + e.Name + ", perf LOST"
		}
		if want := fmt.Sprintf(" lost %d", e.Int(timeline.LostCount)); l.body != want {
			return fmt.Sprintf("%q, perf %q", want, l.body)
		}
		*fieldsChecked++
	default:
		if strings.HasPrefix(l.event, "PERF_RECORD_") {
			return "unexpected perf line " + l.event
		}
		if e.Str(timeline.CommonComm) != l.comm || e.Int(timeline.CommonPID) != l.tid || e.Int(timeline.CommonTGID) != l.pid {
			return fmt.Sprintf("task %s %d/%d, perf %s %d/%d", e.Str(timeline.CommonComm), e.Int(timeline.CommonTGID), e.Int(timeline.CommonPID), l.comm, l.pid, l.tid)
		}
		if fieldStr(e, "ip") != "<none>" || fieldStr(e, "period") != "<none>" || fieldStr(e, "raw") != "<none>" && r.tracing == nil {
			// not a tracepoint: perf prints the event name only
			if e.Name != l.event || l.body != "" {
				return fmt.Sprintf("event %s, perf %s %q", e.Name, l.event, l.body)
			}
			*fieldsChecked += 5
			return ""
		}
		sys, name, _ := strings.Cut(l.event, ":")
		if e.Name != timeline.EventName(sys, name) {
			return fmt.Sprintf("event %s, perf %s", e.Name, l.event)
		}
		if e.Str(timeline.CommonComm) != l.comm || e.Int(timeline.CommonPID) != l.tid || e.Int(timeline.CommonTGID) != l.pid {
			return fmt.Sprintf("task %s %d/%d, perf %s %d/%d", e.Str(timeline.CommonComm), e.Int(timeline.CommonTGID), e.Int(timeline.CommonPID), l.comm, l.pid, l.tid)
		}
		*fieldsChecked += 5
		f := r.tracing.ByName(sys, name)
		if f == nil {
			return "no format for " + l.event
		}
		tmpl, err := parsePrintFmt(f.PrintFmt)
		if err != nil {
			return err.Error()
		}
		groups, err := tmpl.match(l.body)
		if err != nil {
			return err.Error()
		}
		for _, g := range groups {
			fld := g.conv.field
			if fld == "" {
				return fmt.Sprintf("print fmt argument %q names no field", g.conv.arg)
			}
			if fld == "prev_state" {
				if e.Str(timeline.PrevState) != g.text {
					return fmt.Sprintf("prev_state %q (raw %d), perf %q", e.Str(timeline.PrevState), e.Int(timeline.PrevStateRaw), g.text)
				}
				*fieldsChecked++
				continue
			}
			isStr, s, v, ok := rowValue(e, fld)
			if !ok {
				return "row lacks field " + fld
			}
			spec := g.conv.spec
			switch {
			case strings.HasSuffix(spec, "s") && ternaryRE.MatchString(g.conv.arg):
				m := ternaryRE.FindStringSubmatch(g.conv.arg)
				want := m[2]
				if v != 0 {
					want = m[1]
				}
				if isStr || want != g.text {
					return fmt.Sprintf("%s=%d, perf %q", fld, v, g.text)
				}
			case strings.HasSuffix(spec, "s"):
				if !isStr || s != g.text {
					return fmt.Sprintf("%s=%q, perf %q", fld, s, g.text)
				}
			default:
				pv, width, unsigned, err := intOf(spec, g.text)
				if err != nil {
					return fmt.Sprintf("%s: perf value %q: %v", fld, g.text, err)
				}
				if isStr || truncInt(v, width, unsigned) != truncInt(pv, width, unsigned) {
					return fmt.Sprintf("%s=%d, perf %q", fld, v, g.text)
				}
			}
			*fieldsChecked++
		}
	}
	return ""
}

// TestPerfScriptGolden: every row perf script prints, in perf's order,
// with every field equal (time to the ns, cpu, pid/tid, comm and each
// key=value of the tracepoint text), and the per-event counts.
func TestPerfScriptGolden(t *testing.T) {
	for _, fx := range goldenFixtures {
		t.Run(fx.name, func(t *testing.T) {
			compareWithScript(t, fixturePath(fx.name), readGolden(t, fx.name+".script.txt.gz"))
		})
	}
}

// compareWithScript reads path and checks every row against perf script's
// text for it, line by line.
func compareWithScript(t *testing.T, path string, script []byte) {
	lines := parseScript(t, script)
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ours := map[string]int{}
	theirs := map[string]int{}
	for _, l := range lines {
		theirs[l.event]++
	}
	i, errs, checked := 0, 0, 0
	for r.Next() {
		e := r.Event()
		if !printedByScript(e) {
			continue
		}
		if i >= len(lines) {
			t.Fatalf("row %d (%s at %d) beyond the %d lines perf prints", i, e.Name, e.Time, len(lines))
		}
		l := &lines[i]
		theirName := l.event
		switch e.Name {
		case "perf:comm":
			ours["PERF_RECORD_COMM"]++
		case "perf:fork":
			ours["PERF_RECORD_FORK"]++
		case "perf:exit":
			ours["PERF_RECORD_EXIT"]++
		case "perf:switch":
			if fieldStr(e, "next_prev_pid") != "<none>" {
				ours["PERF_RECORD_SWITCH_CPU_WIDE"]++
			} else {
				ours["PERF_RECORD_SWITCH"]++
			}
		case "lost":
			ours["PERF_RECORD_LOST"]++
		default:
			sys, name, _ := strings.Cut(theirName, ":")
			if timeline.EventName(sys, name) == e.Name || theirName == e.Name {
				ours[theirName]++
			} else {
				ours[e.Name]++
			}
		}
		if d := compareLine(r, e, l, &checked); d != "" {
			t.Errorf("perf script line %d: %s\n  %s", l.no, d, l.text)
			if errs++; errs > 10 {
				t.Fatal("too many differences")
			}
		}
		i++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if topo := r.Meta().Topology; topo != nil {
		if err := topo.Validate(); err != nil {
			t.Errorf("topology from the header does not validate: %v", err)
		}
	}
	if i != len(lines) {
		t.Errorf("%d rows, perf prints %d lines", i, len(lines))
	}
	for k, n := range theirs {
		if ours[k] != n {
			t.Errorf("%s: %d rows, perf %d", k, ours[k], n)
		}
	}
	t.Logf("%d lines, %d values compared", len(lines), checked)
}

// TestPerfStatsGolden compares lost events and per-event sample counts with
// perf report --stats.
func TestPerfStatsGolden(t *testing.T) {
	for _, fx := range goldenFixtures {
		if !fx.stats {
			continue
		}
		t.Run(fx.name, func(t *testing.T) {
			text := string(readGolden(t, fx.name+".stats.txt"))
			// section "" = aggregated; else the event name.
			want := map[string]map[string]int64{}
			sect := ""
			lineRE := regexp.MustCompile(`^\s*(\S+) events:\s+(\d+)`)
			for _, line := range strings.Split(text, "\n") {
				if strings.HasSuffix(line, " stats:") && !strings.HasPrefix(line, " ") {
					sect = strings.TrimSuffix(line, " stats:")
					if sect == "Aggregated" {
						sect = ""
					}
					continue
				}
				if m := lineRE.FindStringSubmatch(line); m != nil {
					if want[sect] == nil {
						want[sect] = map[string]int64{}
					}
					n, _ := strconv.ParseInt(m[2], 10, 64)
					want[sect][m[1]] = n
				}
			}
			r, err := Open(fixturePath(fx.name))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := map[string]map[string]int64{"": {}}
			add := func(sect, k string, n int64) {
				if got[sect] == nil {
					got[sect] = map[string]int64{}
				}
				got[sect][k] += n
			}
			var lostSum, lostSamplesSum int64
			for r.Next() {
				e := r.Event()
				switch e.Name {
				case "perf:comm":
					add("", "COMM", 1)
				case "perf:fork":
					add("", "FORK", 1)
				case "perf:exit":
					add("", "EXIT", 1)
				case "perf:switch":
					if fieldStr(e, "next_prev_pid") != "<none>" {
						add("", "SWITCH_CPU_WIDE", 1)
					} else {
						add("", "SWITCH", 1)
					}
				case "lost":
					n := e.Int(timeline.LostCount)
					if fieldStr(e, "record") == "PERF_RECORD_LOST" {
						add("", "LOST", 1)
						lostSum += n
					} else {
						add("", "LOST_SAMPLES", 1)
						add(fieldStr(e, "event"), "LOST_SAMPLES", n)
						lostSamplesSum += n
					}
				default:
					add("", "SAMPLE", 1)
				}
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			// Per-event sample counts, by perf's event name.
			r2, _ := Open(fixturePath(fx.name))
			defer r2.Close()
			for r2.Next() {
				e := r2.Event()
				if strings.HasPrefix(e.Name, "perf:") || e.Name == "lost" {
					continue
				}
				for _, a := range r2.attrs {
					if a.row == e.Name {
						add(r2.attrName(a), "SAMPLE", 1)
						break
					}
				}
			}
			// perf report --stats names events its own way in pipe mode
			// ("cycles:uH" where the file and perf script say "cycles:u"):
			// match such sections to our attr by the name before the modifiers.
			for sect := range want {
				if _, ok := got[sect]; ok || sect == "" {
					continue
				}
				base, _, _ := strings.Cut(sect, ":")
				for _, a := range r2.attrs {
					n := r2.attrName(a)
					if b, _, _ := strings.Cut(n, ":"); a.typ != typeTracepoint && b == base {
						want[n] = want[sect]
						delete(want, sect)
						break
					}
				}
			}
			for sect, kv := range want {
				for k, n := range kv {
					switch k {
					case "COMM", "FORK", "EXIT", "SAMPLE", "LOST", "LOST_SAMPLES", "SWITCH", "SWITCH_CPU_WIDE":
					default:
						continue // MMAP, FINISHED_ROUND...: not rows
					}
					if got[sect][k] != n {
						t.Errorf("%q %s events: %d, perf report --stats %d", sect, k, got[sect][k], n)
					}
				}
			}
			for sect, kv := range got {
				for k, n := range kv {
					if want[sect][k] != n && n != 0 {
						if _, ok := want[sect][k]; !ok {
							t.Errorf("%q %s events: %d, perf report --stats has none", sect, k, n)
						}
					}
				}
			}
			m := r.Meta()
			if m.Summary.Lost.ByReason["PERF_RECORD_LOST"] != uint64(lostSum) || m.Summary.Lost.ByReason["PERF_RECORD_LOST_SAMPLES"] != uint64(lostSamplesSum) {
				t.Errorf("Meta lost %v, rows LOST %d LOST_SAMPLES %d", m.Summary.Lost.ByReason, lostSum, lostSamplesSum)
			}
		})
	}
}

// TestCallchainGolden compares callchains with the raw chains of perf
// script -D (context markers included).
func TestCallchainGolden(t *testing.T) {
	for _, fx := range goldenFixtures {
		if !fx.chains {
			continue
		}
		t.Run(fx.name, func(t *testing.T) {
			want := map[string][]string{}
			n := 0
			for _, line := range strings.Split(string(readGolden(t, fx.name+".chains.txt.gz")), "\n") {
				k, chain, ok := strings.Cut(line, ":")
				if !ok {
					continue
				}
				want[k] = append(want[k], strings.TrimSpace(chain))
				n++
			}
			r, err := Open(fixturePath(fx.name))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := 0
			for r.Next() {
				e := r.Event()
				if !e.IsSet(timeline.CommonPID) || strings.HasPrefix(e.Name, "perf:") {
					continue
				}
				k := fmt.Sprintf("%d %d %d/%d", e.Int(timeline.CPU), e.Time, e.Int(timeline.CommonTGID), e.Int(timeline.CommonPID))
				q := want[k]
				if len(q) == 0 {
					t.Fatalf("no perf chain for %s %s", e.Name, k)
				}
				want[k] = q[1:]
				var b strings.Builder
				for i, ip := range e.Callchain {
					if i > 0 {
						b.WriteByte(' ')
					}
					fmt.Fprintf(&b, "%016x", ip)
				}
				if b.String() != q[0] {
					t.Fatalf("%s %s: chain\n  %s\nperf\n  %s", e.Name, k, b.String(), q[0])
				}
				got++
			}
			if got != n {
				t.Errorf("%d chains, perf %d", got, n)
			}
		})
	}
}
