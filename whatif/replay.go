package whatif

import (
	"fmt"
	"strconv"

	"github.com/schedreplay/replay/model"
	"github.com/schedreplay/replay/timeline"
)

// Result is one replay's outcome.
type Result struct {
	Stats   *Stats
	Metrics *Metrics
	Domains *model.Domains
}

// Domains are the sched domains the replay runs on.
func (s *Sim) Domains() *model.Domains { return s.dom }

// Replay runs w under cfg, measuring the simulated schedule with the same
// analysis as the observed one and sending it to out (may be nil).
func Replay(w *Workload, cfg Config, out Sink) (*Result, error) {
	var m *Measurer
	tee := Tee{}
	if out != nil {
		tee = append(tee, out)
	}
	s, err := New(w, cfg, nil)
	if err != nil {
		return nil, err
	}
	m = newMeasurer(s.dom, s.ncpu, true, cfg.Worst)
	s.meas = m
	tee = append(tee, m)
	s.out = tee
	st, err := s.Run()
	if err != nil {
		return nil, err
	}
	mt, _, err := m.Finish()
	if err != nil {
		return nil, err
	}
	return &Result{Stats: st, Metrics: mt, Domains: s.dom}, nil
}

// ReplayToFile replays w and writes the simulated schedule as a timeline
// file at path (Source.Format "replay whatif", Extra["policy"], the
// machine's topology), returning the result.
func ReplayToFile(path string, w *Workload, cfg Config) (*Result, error) {
	tw, err := timeline.Create(path, timeline.WriterOptions{})
	if err != nil {
		return nil, err
	}
	res, err := Replay(w, cfg, TimelineSink{tw})
	if err != nil {
		tw.Abort()
		return nil, err
	}
	topo := cfg.Topology
	if topo == nil {
		topo = w.Topology
	}
	kernel := cfg.Kernel
	if kernel == "" {
		kernel = w.Kernel
	}
	meta := &timeline.Meta{Topology: topo}
	meta.Source = timeline.Source{
		Format: "replay whatif", Path: w.Source, OSRelease: kernel, NrCPUs: res.Domains.NrCPUs, NrCPUsOnline: res.Domains.NrCPUs,
		ClockID: -1, Events: []string{"sched:sched_switch", "sched:sched_waking", "sched:sched_wakeup_new", "sched:sched_migrate_task", "sched:sched_process_fork", "sched:sched_process_exit"},
		Extra: map[string]string{"policy": cfg.Policy.Name(), "seed": strconv.FormatUint(cfg.Seed, 10), "hz": strconv.Itoa(cfg.withDefaults().HZ),
			"arrivals": arrivalName(cfg.Arrivals)},
	}
	if err := tw.Close(meta); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

func arrivalName(a ArrivalMode) string {
	if a == ArrivalsAbsolute {
		return "absolute"
	}
	return "relative"
}

// ParseArrivals parses --arrivals.
func ParseArrivals(s string) (ArrivalMode, error) {
	switch s {
	case "", "relative":
		return ArrivalsRelative, nil
	case "absolute":
		return ArrivalsAbsolute, nil
	}
	return 0, fmt.Errorf("--arrivals %q: want absolute or relative", s)
}
