package whatif

import (
	"strings"
	"testing"
)

// --set parsing: the keys, values and errors (which name the valid keys).
func TestParseSetting(t *testing.T) {
	var cfg Config
	for _, kv := range []string{"imbalance_pct.*=130", "imbalance_pct.MC=125", "busy_factor=8", "busy_factor.NUMA=4",
		"migration_cost=250us", "nr_migrate=8", "hz=1000", "imbalance_pct.MC=120", "reply_awaits=on", "tick_softirq=on", "irq_cpu=trace", "wake_overhead=skip", "idle_exit=split", "wakee_flips=4", "start_pelt=heavy"} {
		s, err := ParseSetting(kv)
		if err != nil {
			t.Fatalf("%s: %v", kv, err)
		}
		if err := s.Apply(&cfg); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.MigrationCostNS != 250000 || cfg.NrMigrate != 8 || cfg.HZ != 1000 || !cfg.ReplyAwaits || !cfg.TickSoftIRQ || !cfg.IRQCPU || !cfg.SkipWakeOverhead || cfg.WakeeFlips != 4 || !cfg.StartPELTHeavy {
		t.Errorf("config %+v", cfg)
	}
	// "*" first, the later MC value replaces the earlier one.
	if got := cfg.Params.ImbalancePct; len(got) != 2 || got[0] != (DomainParam{"*", 130}) || got[1] != (DomainParam{"MC", 120}) {
		t.Errorf("imbalance_pct %v", got)
	}
	if got := cfg.Params.BusyFactor; len(got) != 2 || got[0] != (DomainParam{"*", 8}) || got[1] != (DomainParam{"NUMA", 4}) {
		t.Errorf("busy_factor %v", got)
	}
	if s, err := ParseSetting("wakee_flips=trace"); err != nil || s.Apply(&cfg) != nil || cfg.WakeeFlips != -1 {
		t.Errorf("wakee_flips=trace: %v, WakeeFlips %d, want -1 (the trace's placements)", err, cfg.WakeeFlips)
	}
	if s, err := ParseSetting("irq_cpu=own"); err != nil || s.Apply(&cfg) != nil || cfg.IRQCPU {
		t.Errorf("irq_cpu=own: %v, IRQCPU %v, want false", err, cfg.IRQCPU)
	}
	for v, want := range map[string]string{"on": EASOn, "off": EASOff, "auto": EASAuto} {
		if s, err := ParseSetting("eas=" + v); err != nil || s.Apply(&cfg) != nil || cfg.EAS != want {
			t.Errorf("eas=%s: %v, EAS %q, want %q", v, err, cfg.EAS, want)
		}
	}
	for _, c := range []struct {
		kv   string
		flag *bool
		want bool
	}{{"irq_flip=own", &cfg.IRQFlip, false}, {"irq_flip=trace", &cfg.IRQFlip, true},
		{"irq_ipi=off", &cfg.IRQIPI, false}, {"irq_ipi=on", &cfg.IRQIPI, true}} {
		if s, err := ParseSetting(c.kv); err != nil || s.Apply(&cfg) != nil || *c.flag != c.want {
			t.Errorf("%s: %v, the flag %v, want %v", c.kv, err, *c.flag, c.want)
		}
	}
	if d := DefaultConfig(nil).TimerSlackNS; d != 50000 {
		t.Errorf("default timer slack %d ns, want the kernel's 50 µs", d)
	}
	for kv, want := range map[string]int64{"timer_slack=100us": 100000, "timer_slack=off": 0} {
		if s, err := ParseSetting(kv); err != nil || s.Apply(&cfg) != nil || cfg.TimerSlackNS != want {
			t.Errorf("%s: %v, TimerSlackNS %d, want %d", kv, err, cfg.TimerSlackNS, want)
		}
	}
	if s, err := ParseSetting("idle_exit=split"); err != nil || s.Apply(&cfg) != nil || !cfg.IdleExitSplit {
		t.Errorf("idle_exit=split: %v, IdleExitSplit %v, want true", err, cfg.IdleExitSplit)
	}
	if s, err := ParseSetting("wake_overhead=keep"); err != nil || s.Apply(&cfg) != nil || cfg.SkipWakeOverhead {
		t.Errorf("wake_overhead=keep: %v, SkipWakeOverhead %v, want false", err, cfg.SkipWakeOverhead)
	}
	s, _ := ParseSetting("migration_cost=0")
	var c0 Config
	_ = s.Apply(&c0)
	if c0.MigrationCostNS != 1 {
		t.Errorf("migration_cost=0 gives %d ns, want 1 (0 is Config's default)", c0.MigrationCostNS)
	}
	for kv, want := range map[string]string{
		"imbalance_pct=117":   "needs a level",
		"imbalance_pct.LLC=1": "unknown domain level",
		"imbalance_pct.MC=99": ">= 100",
		"busy_factor=0":       ">= 1",
		"migration_cost=5":    "duration",
		"migration_cost=-1ms": "duration",
		"nr_migrate=x":        ">= 1",
		"hz=200":              "CONFIG_HZ",
		"reply_awaits=yes":    "on or off",
		"tick_softirq=1":      "on or off",
		"wake_overhead=on":    "skip or keep",
		"irq_cpu=on":          "trace or own",
		"irq_ipi=trace":       "on or off",
		"start_pelt=light":    "heavy or trace",
		"eas=maybe":           "auto, on or off",
		"wakee_flips=-1":      "0..1048576",
		"wakee_flips=many":    "0..1048576",
		"timer_slack=0":       "off or a duration",
		"timer_slack=fast":    "off or a duration",
		"tick=250":            "unknown key",
		"nr_migrate.MC=3":     "unknown key",
		"imbalance_pct.MC":    "key=value",
		"=3":                  "key=value",
	} {
		_, err := ParseSetting(kv)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", kv, err, want)
		}
		if err != nil && strings.Contains(want, "unknown key") && !strings.Contains(err.Error(), "migration_cost=DURATION") {
			t.Errorf("%s: error does not list the keys: %v", kv, err)
		}
	}
}

// imbalance_pct.MC reaches the engine's MC domains and changes the
// decision. Hand-worked (v6.1, find_busiest_group): two overloaded MC
// groups of 2 CPUs (capacity 2048, 3 tasks, util 2048 so overloaded under
// both 117 and 125), group_load 2000 (local) and 2400 (busiest): avg_load
// 2000·1024/2048 = 1000 and 1200; domain avg 4400·1024/4096 = 1100 > 1000.
// The test "100·busiest ≤ imbalance_pct·local": 120000 ≤ 117·1000 = 117000
// is false, so the kernel's 117 balances (migrate_load); 120000 ≤ 125000
// is true with imbalance_pct.MC=125, so the domain counts as balanced.
func TestParamsImbalancePctDecision(t *testing.T) {
	w, _ := extractFixture(t, "../fixtures/kernels/guest-A-2s2c2t-2numa/schbench.perf.data")
	mcPct := func(set ...string) int {
		cfg := DefaultConfig(mustPolicy(t, "v6.1"))
		for _, kv := range set {
			s, err := ParseSetting(kv)
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Apply(&cfg)
		}
		s, err := New(w, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, cd := range s.Domains().CPUs {
			for _, sd := range cd.Domains {
				if sd.Name == "MC" {
					return sd.ImbalancePct
				}
			}
		}
		t.Fatal("no MC domain")
		return 0
	}
	decide := func(pct int) Verdict {
		grp := func(load uint64) SGStats {
			return SGStats{GroupCapacity: 2048, GroupWeight: 2, SumNrRunning: 3, SumHNrRunning: 3, GroupUtil: 2048, GroupRunnable: 2048, GroupLoad: load, Cores: 1}
		}
		_, _, v, _ := runLB(mustPolicy(t, "v6.1"), lbCase{env: LBEnv{SDFlags: llcFlags, ImbalancePct: uint64(pct), Idle: CPUNotIdle}, local: grp(2000), busy: grp(2400)})
		return v
	}
	def, set := mcPct(), mcPct("imbalance_pct.MC=125")
	if def != 117 || set != 125 {
		t.Fatalf("MC imbalance_pct %d (default) and %d (--set), want 117 and 125", def, set)
	}
	if decide(def) != ForceBalance || decide(set) != Balanced {
		t.Errorf("decisions %v (117) %v (125), want force balance, balanced", decide(def), decide(set))
	}
	if p := mcPct("imbalance_pct.*=140", "imbalance_pct.MC=125"); p != 125 {
		t.Errorf("named level after *: %d, want 125", p)
	}
	cfg := DefaultConfig(mustPolicy(t, "v6.1"))
	cfg.Params.ImbalancePct = []DomainParam{{"CLS", 120}}
	if _, err := New(w, cfg, nil); err == nil || !strings.Contains(err.Error(), "no CLS domain") {
		t.Errorf("a level the machine lacks: %v", err)
	}
}
