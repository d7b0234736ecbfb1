package synth

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/schedreplay/replay/model"
)

// Generator is a benchmark's options.
type Generator interface {
	Generate(topo *model.Topology) (*Result, error)
	Command() string
	Validate() error
	setSeed(uint64)
	generate(b *builder) (*Result, error)
}

func (o *Schbench) setSeed(s uint64)  { o.Seed = s }
func (o *Hackbench) setSeed(s uint64) { o.Seed = s }
func (o *Ebizzy) setSeed(s uint64)    { o.Seed = s }

// Option is one flag of a benchmark, named as the real program names it
// (Names[0] is the short form when there is one).
type Option struct {
	Names []string
	Bool  bool
	Usage string
	set   func(g Generator, v string) error
}

// Set applies the flag's value to g (a generator of the Spec's kind).
func (o Option) Set(g Generator, v string) error {
	if err := o.set(g, v); err != nil {
		return fmt.Errorf("-%s %q: %w", o.Names[0], v, err)
	}
	return nil
}

// Spec is a benchmark: its name, flags and defaults.
type Spec struct {
	Name    string
	Usage   string
	Options []Option
	New     func() Generator
}

func atoi(v string) (int, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("want an integer")
	}
	return int(n), nil
}

func atoi64(v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want an integer")
	}
	return n, nil
}

func atob(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("want true or false")
	}
	return b, nil
}

func intOpt[T any](names []string, usage string, field func(*T) *int) Option {
	return Option{Names: names, Usage: usage, set: func(g Generator, v string) error {
		n, err := atoi(v)
		if err == nil {
			*field(any(g).(*T)) = n
		}
		return err
	}}
}

func int64Opt[T any](names []string, usage string, field func(*T) *int64) Option {
	return Option{Names: names, Usage: usage, set: func(g Generator, v string) error {
		n, err := atoi64(v)
		if err == nil {
			*field(any(g).(*T)) = n
		}
		return err
	}}
}

func boolOpt[T any](names []string, usage string, field func(*T) *bool) Option {
	return Option{Names: names, Bool: true, Usage: usage, set: func(g Generator, v string) error {
		b, err := atob(v)
		if err == nil {
			*field(any(g).(*T)) = b
		}
		return err
	}}
}

// Specs lists the benchmarks.
func Specs() []Spec {
	return []Spec{
		{Name: "schbench", Usage: "schbench (late-2020 version, spec §7.1; --version 2023: the rewrite, §7.2): message threads waking workers; measures the workers' wakeup latency",
			New: func() Generator { o := DefaultSchbench(); return &o },
			Options: []Option{
				// First: it resets the defaults (ParseCommand applies it
				// before the others, as the CLI does).
				{Names: []string{"version"}, Usage: "which schbench: 2020 (default; the seeds' late-2020 version, spec §7.1) or 2023 (the rewrite, §7.2: -n, -F, -L, -R; its defaults -m 1, -t CPUs/-m, -s 100, -w 0)", set: func(g Generator, v string) error {
					n, err := atoi(v)
					if err != nil {
						return err
					}
					o := g.(*Schbench)
					switch n {
					case 2020:
						seed := o.Seed
						*o = DefaultSchbench()
						o.Seed = seed
					case 2023:
						seed := o.Seed
						*o = DefaultSchbench2023()
						o.Seed = seed
					default:
						return fmt.Errorf("want 2020 or 2023")
					}
					return nil
				}},
				intOpt[Schbench]([]string{"m", "message-threads"}, "number of message threads (2)", func(o *Schbench) *int { return &o.MessageThreads }),
				intOpt[Schbench]([]string{"t", "threads"}, "worker threads per message thread (16)", func(o *Schbench) *int { return &o.Workers }),
				intOpt[Schbench]([]string{"r", "runtime"}, "seconds to run (30; 0 = forever cannot be generated)", func(o *Schbench) *int { return &o.RuntimeS }),
				int64Opt[Schbench]([]string{"s", "sleeptime", "sleep_usec"}, "2020: message thread latency, usec (30000); 2023: worker sleep per request, usec (100)", func(o *Schbench) *int64 { return &o.SleepUS }),
				int64Opt[Schbench]([]string{"C", "message_cputime"}, "message thread think time, usec: parsed but not applied by that version (always 30000) unless --fix-C", func(o *Schbench) *int64 { return &o.MessageCPUUS }),
				boolOpt[Schbench]([]string{"fix-C"}, "apply -C (the later fix) instead of reproducing the 2020 bug", func(o *Schbench) *bool { return &o.FixC }),
				int64Opt[Schbench]([]string{"c", "cputime"}, "worker think time per loop, usec (30000)", func(o *Schbench) *int64 { return &o.CPUTimeUS }),
				intOpt[Schbench]([]string{"w", "warmuptime"}, "seconds of warmup before the stats are zeroed (5)", func(o *Schbench) *int { return &o.WarmupS }),
				intOpt[Schbench]([]string{"i", "intervaltime"}, "seconds between printed stats (10)", func(o *Schbench) *int { return &o.IntervalS }),
				intOpt[Schbench]([]string{"z", "zerotime"}, "zero the stats every N seconds (0: never)", func(o *Schbench) *int { return &o.ZeroS }),
				intOpt[Schbench]([]string{"n", "operations"}, "2023: matrix multiplications per request (5)", func(o *Schbench) *int { return &o.Operations }),
				intOpt[Schbench]([]string{"F", "cache_footprint"}, "2023: working set of the multiplications, KiB (256)", func(o *Schbench) *int { return &o.FootprintKB }),
				boolOpt[Schbench]([]string{"L", "no-locking"}, "2023: no per-CPU lock around the work (the lock is not modelled; see docs/synth.md)", func(o *Schbench) *bool { return &o.NoLocking }),
				intOpt[Schbench]([]string{"R", "rps"}, "2023: requests per second over all message threads (0: the post/wake loop)", func(o *Schbench) *int { return &o.RPS }),
				intOpt[Schbench]([]string{"A", "auto-rps"}, "2023: auto-RPS target busy percent (refused: it follows the real machine's /proc/stat)", func(o *Schbench) *int { return &o.AutoRPS }),
				int64Opt[Schbench]([]string{"mac-ps"}, "2023: ps of CPU per multiply-add of the matrix work at capacity 1024 (model assumption, 1000)", func(o *Schbench) *int64 { return &o.MACps }),
			}},
		{Name: "hackbench", Usage: "rt-tests hackbench (spec §7.3): groups of senders writing to receivers over sockets or pipes; measures the time until all finish",
			New: func() Generator { o := DefaultHackbench(); return &o },
			Options: []Option{
				intOpt[Hackbench]([]string{"g", "groups"}, "groups of senders and receivers (10)", func(o *Hackbench) *int { return &o.Groups }),
				intOpt[Hackbench]([]string{"f", "fds"}, "receivers and senders per group (20)", func(o *Hackbench) *int { return &o.FDs }),
				intOpt[Hackbench]([]string{"l", "loops"}, "messages each sender sends to each receiver (100)", func(o *Hackbench) *int { return &o.Loops }),
				intOpt[Hackbench]([]string{"s", "datasize"}, "bytes per message (100)", func(o *Hackbench) *int { return &o.DataSize }),
				boolOpt[Hackbench]([]string{"p", "pipe"}, "use pipes instead of socketpairs", func(o *Hackbench) *bool { return &o.Pipe }),
				boolOpt[Hackbench]([]string{"T", "threads"}, "use threads instead of processes", func(o *Hackbench) *bool { return &o.Threads }),
				boolOpt[Hackbench]([]string{"F", "fifo"}, "run the main thread SCHED_FIFO (priority 1)", func(o *Hackbench) *bool { return &o.FIFO }),
				Option{Names: []string{"P", "processes"}, Bool: true, Usage: "use processes (the default)", set: func(g Generator, v string) error {
					b, err := atob(v)
					if err == nil && b {
						g.(*Hackbench).Threads = false
					}
					return err
				}},
			}},
		{Name: "ebizzy", Usage: "ebizzy 0.3 (LTP; spec §7.4): CPU-bound threads copying and searching memory chunks; measures records/s (and cpu-migrations)",
			New: func() Generator { o := DefaultEbizzy(); return &o },
			Options: []Option{
				intOpt[Ebizzy]([]string{"t"}, "threads (0: 2 × the topology's CPUs)", func(o *Ebizzy) *int { return &o.Threads }),
				intOpt[Ebizzy]([]string{"n"}, "number of memory chunks (10)", func(o *Ebizzy) *int { return &o.Chunks }),
				intOpt[Ebizzy]([]string{"s"}, "chunk size, bytes (524288)", func(o *Ebizzy) *int { return &o.ChunkSize }),
				intOpt[Ebizzy]([]string{"S"}, "seconds to run (10)", func(o *Ebizzy) *int { return &o.Seconds }),
				boolOpt[Ebizzy]([]string{"m"}, "always mmap the copy buffer", func(o *Ebizzy) *bool { return &o.AlwaysMmap }),
				boolOpt[Ebizzy]([]string{"M"}, "never mmap", func(o *Ebizzy) *bool { return &o.NeverMmap }),
				boolOpt[Ebizzy]([]string{"R"}, "random copy sizes", func(o *Ebizzy) *bool { return &o.RandomSize }),
				boolOpt[Ebizzy]([]string{"l"}, "byte-wise memcpy instead of the library's", func(o *Ebizzy) *bool { return &o.ByteMemcpy }),
				boolOpt[Ebizzy]([]string{"z"}, "linear search instead of binary", func(o *Ebizzy) *bool { return &o.Linear }),
				boolOpt[Ebizzy]([]string{"p"}, "prevent mmap coalescing with permissions (not modelled)", func(o *Ebizzy) *bool { return &o.Permissions }),
				boolOpt[Ebizzy]([]string{"P"}, "prevent mmap coalescing with holes (not modelled)", func(o *Ebizzy) *bool { return &o.Holes }),
				boolOpt[Ebizzy]([]string{"T"}, "only touch the pages, no copy or search", func(o *Ebizzy) *bool { return &o.TouchPages }),
				Option{Names: []string{"v"}, Bool: true, Usage: "verbose (output only)", set: func(g Generator, v string) error {
					b, err := atob(v)
					if err == nil && b {
						g.(*Ebizzy).Verbose++
					}
					return err
				}},
				Option{Names: []string{"block-prob"}, Usage: "probability that a record blocks on the mm lock (model assumption; default 0.5 with -m, else 0.01)", set: func(g Generator, v string) error {
					f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
					if err != nil || !(f >= 0 && f <= 1) {
						return fmt.Errorf("want a probability 0..1")
					}
					g.(*Ebizzy).BlockProb = f
					return nil
				}},
			}},
	}
}

// LookupSpec finds a benchmark by name.
func LookupSpec(name string) (Spec, error) {
	var names []string
	for _, s := range Specs() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Spec{}, fmt.Errorf("unknown benchmark %q (known: %s)", name, strings.Join(names, ", "))
}

// ParseCommand parses a benchmark command line as the real program takes
// it ("schbench -m 2 -t 4 -s 10000", "hackbench --pipe -g 4 -l640",
// "ebizzy -t 48 -S 10"): short flags with the value attached or
// following, long flags with = or a following value. It returns the
// options, validated (ebizzy's -t 0 is resolved at Generate).
func ParseCommand(args []string) (Generator, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no benchmark named")
	}
	sp, err := LookupSpec(args[0])
	if err != nil {
		return nil, err
	}
	g := sp.New()
	find := func(name string) *Option {
		for i := range sp.Options {
			for _, n := range sp.Options[i].Names {
				if n == name {
					return &sp.Options[i]
				}
			}
		}
		return nil
	}
	// --version resets the defaults: apply it before the other flags.
	skip := map[int]bool{}
	if o := find("version"); o != nil {
		for i := 1; i < len(args); i++ {
			a := args[i]
			if v, ok := strings.CutPrefix(a, "--version="); ok {
				if err := o.Set(g, v); err != nil {
					return nil, fmt.Errorf("%s: %w", sp.Name, err)
				}
				skip[i] = true
			} else if a == "--version" && i+1 < len(args) {
				if err := o.Set(g, args[i+1]); err != nil {
					return nil, fmt.Errorf("%s: %w", sp.Name, err)
				}
				skip[i], skip[i+1] = true, true
				i++
			}
		}
	}
	for i := 1; i < len(args); i++ {
		if skip[i] {
			continue
		}
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			return nil, fmt.Errorf("%s: unexpected argument %q", sp.Name, a)
		}
		var name, val string
		hasVal := false
		if strings.HasPrefix(a, "--") {
			name = a[2:]
			if k := strings.IndexByte(name, '='); k >= 0 {
				name, val, hasVal = name[:k], name[k+1:], true
			}
		} else {
			name = a[1:]
			if o := find(name); o == nil && len(name) > 1 {
				// getopt style: "-m2", "-vvv".
				if o1 := find(name[:1]); o1 != nil && !o1.Bool {
					name, val, hasVal = name[:1], name[1:], true
				} else if o1 != nil && strings.Trim(name, name[:1]) == "" {
					for range name[1:] {
						if err := o1.Set(g, "true"); err != nil {
							return nil, err
						}
					}
					name = name[:1]
				}
			}
		}
		o := find(name)
		if o == nil {
			return nil, fmt.Errorf("%s: unknown flag %q", sp.Name, a)
		}
		if o.Bool {
			if !hasVal {
				val = "true"
			}
		} else if !hasVal {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%s: flag %q needs a value", sp.Name, a)
			}
			i++
			val = args[i]
		}
		if err := o.Set(g, val); err != nil {
			return nil, fmt.Errorf("%s: %w", sp.Name, err)
		}
	}
	v := g
	if e, ok := g.(*Ebizzy); ok && e.Threads == 0 {
		c := *e
		c.Threads = 1 // resolved from the topology at Generate
		v = &c
	}
	if err := v.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// SetSeed sets the generator's seed.
func SetSeed(g Generator, seed uint64) { g.setSeed(seed) }
