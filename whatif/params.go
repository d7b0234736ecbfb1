package whatif

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/schedreplay/replay/model"
)

// Scheduler parameters a user may set on a replay (`replay whatif --set
// key=value`, `--sweep key=v1,v2`). The sysctls (migration_cost,
// nr_migrate) and the tick rate are Config fields already; the per-domain
// tunables (imbalance_pct, busy_factor) are Params, applied where the
// engine builds its domains, after the policy's own sd_init values
// (Knobs.ImbalancePctDefault/BusyFactor), so a user's value always wins —
// as writing the kernel's per-domain debugfs/sysctl files after boot
// would. A comparison applies the same settings to the baseline and every
// policy: the question is how the policies differ under those parameters.

// ParamKeys are the keys --set and --sweep accept, for usage messages.
var ParamKeys = []string{"imbalance_pct.LEVEL", "busy_factor[.LEVEL]", "migration_cost", "nr_migrate", "hz", "slice_protection", "newidle_ratio", "reply_awaits", "herd_awaits", "fork_wait", "exit_preempt", "exit_wake", "start_pelt", "tick_softirq", "tick_switch", "switch_charge", "irq_cpu", "irq_ipi", "wake_overhead", "idle_exit", "wakee_flips", "trace_end_run_on", "host_stall", "nohz_kick", "idle_tick", "timer_slack", "busy_host_wait", "stall_contention", "wake_stall", "balance_phase", "irq_stall", "irq_flip", "eas"}

// ParamLevels are the domain level names imbalance_pct/busy_factor accept
// (as model.BuildDomains names them; the package level is PKG from v6.9,
// DIE before), and "*" for every level.
var ParamLevels = []string{"SMT", "CLS", "MC", "PKG", "DIE", "NODE", "NUMA", "*"}

// maxWakeeFlips bounds wakee_flips=N: far above any count a task reaches
// (one per change of wakee, halved every second).
const maxWakeeFlips = 1 << 20

// ValidHZ are the CONFIG_HZ choices of the kernel's Kconfig.
var ValidHZ = []int{100, 250, 300, 1000}

// ParamUsage is a one-line description of the accepted settings.
func ParamUsage() string {
	return "imbalance_pct.LEVEL=N (N >= 100), busy_factor=N or busy_factor.LEVEL=N (N >= 1), " +
		"migration_cost=DURATION (e.g. 500us, 0 = never cache hot), nr_migrate=N (N >= 1), hz=100|250|300|1000, " +
		"slice_protection=" + strings.Join(SliceProtections, "|") + " (EEVDF kernels), " +
		"newidle_ratio=trace|share|boot|N (NI_RANDOM's starting success ratio of 1024; kernels with NI_RANDOM; trace: the trace's share of newidle chances taken when its kernel's policy has NI_RANDOM, share: whatever that policy), " +
		"reply_awaits=on|off (a waker waits for the reply its wakee's preemption hid in the trace; default off), " +
		"herd_awaits=on|off (a waker its wakee preempted, the wakee then waking at least three tasks of the waker's command before the waker ran again (a start barrier's broadcast), waits at its preemption point for the first of those wakeups; default on), " +
		"fork_wait=on|off (a parent that waits for its children forks only once as many have exited as the trace shows by the fork, sleeping in the wait the trace hid; default on), " +
		"exit_preempt=on|off (a child may be preempted between its exit notification and its exit, which the kernel never does; default off), " +
		"exit_wake=early|late (a child's exit wakes the parent waiting for it before the child's last switch, as the kernel's exit_notify does, or after it, as the replay did before round 73; default early), " +
		"start_pelt=trace|heavy (a task running or runnable at the trace start begins with the PELT averages its shares of the trace's first 64 ms give, or with its whole weight as load and half the capacity as util, as the replay did before round 75; default trace), " +
		"tick_softirq=on|off (a timer wakeup the tick's softirq made in the trace fires on the tick grid, that tick's switch waiting for it; default off), " +
		"tick_switch=on|off (a tick that ends the running task's slice switches after a delay drawn from the trace's own tick-to-switch runs; default off), " +
		"switch_charge=on|pools|off (the run from a leaving task's last update to its switch-out, drawn from the trace's own, is charged to the task switched in, as the kernel's switch does, and at a block where the trace shows that gap a quarter tick or more (a host stall, a run on with the reschedule pending) that gap; pools: drawn from the trace's shorter ones at every switch; default on), " +
		"trace_end_run_on=on|off (a task the trace's end cut short runs on, once its recorded demand is done, until the replay's recording window closes or the trace's end; default on), " +
		"irq_cpu=trace|own (an interrupt's wakeup runs on the CPU the trace shows it on when that is not where its wakee slept, as RCU's softirq wakes its kthread from another CPU; own: always where the wakee slept; default own), " +
		"wake_overhead=keep|skip (skip: an activation a task goes on into without blocking skips the block and wakeup its recorded demand includes; keep: runs its whole recorded demand, the default before FIDELITY.md round 122; default skip), " +
		"idle_exit=split|pool (split: on a trace without measured host contention a fork's idle exit is drawn from the trace's fork idle exits and any other wakeup's from the rest, each with 8 samples or more; pool: both from one pool; default pool, FIDELITY.md round 152), " +
		"nohz_kick=idle_exit|ipi (on a trace that shows host contention, the nohz idle balancer's kick reaches the idle vCPU after an idle exit drawn as a remote wakeup's, the host running that vCPU first, or after an IPI's latency alone; default idle_exit), " +
		"idle_tick=stop|N (N: an idle CPU takes N ticks of its own, balancing on them, before its tick stops and it enters nohz idle, as the 6.1 stable series' idle loop without a cpuidle driver does for the first since 6.1.170 (f4c31b07b136) and pending RCU callbacks for more; under measured host contention each waits for the host to run the vCPU, as an IPI does; default stop: the tick stops as the CPU goes idle), " +
		"timer_slack=DURATION|off (an hrtimer wakeup of a task outside the real-time class fires early in the interrupt of another timer on its CPU due at most this much before it, or at its tick, as timer_slack_ns lets hrtimer_interrupt expire it; default 50us, the kernel's), " +
		"busy_host_wait=on|off (on a trace that shows host contention, a wakeup preemption sent to another busy vCPU outside its running task's host stalls waits for a host core at the share those stalls leave of the contention's stalled fraction, its task firing no wakeup meanwhile; default on), " +
		"stall_contention=on|off (on a trace that shows host contention, a host stall it shows in a task's demand is shortened where the replay runs that task with fewer vCPUs busy than the trace had then, to the share the host's contention leaves of it; default on), " +
		"wake_stall=on|off (a wakeup the trace shows queued only after a host stall of its waker inside try_to_wake_up is queued after that stall in the replay too when it goes to another CPU than the waker's, its latency counting from the waking; default on), " +
		"host_stall=task|cpu (a host stall the trace shows travels with the task it fell on, at that point of its demand, or stays on its vCPU's wall clock, stopping whatever task the replay runs there; default task), " +
		"balance_phase=trace|own (a periodic balance the trace shows moving tasks between the two CPUs of a domain falls due at that tick on the less loaded of them, the balancer's phase being hidden state; own: the model's phase alone; default trace), " +
		"irq_stall=own|all (the host stall an interrupt's wakeup preemption meets before its switch, at the rate the trace's real-time interrupt wakeups met one, is one of the stalls those wakeups waited through; all: one of every stall the trace measured; default own), " +
		"irq_flip=trace|own (an interrupt's wakeup counts in record_wakee as a wakee flip of the task the trace shows it interrupted, none for the idle task; own: of the task the replay runs where it fires; default trace), " +
		"eas=auto|on|off (energy-aware scheduling: auto runs it where the kernel, v5.0 on, and the machine have it, a topology with an Energy Model (perf_domains) and CPUs of unequal capacity; on: a development tree that had it before v5.0; default auto), " +
		"wakee_flips=trace|N (wake_wide's wakee_flips of the tasks alive at the trace start; default trace: the count the trace's placements imply, else 0); " +
		"LEVEL: " + strings.Join(ParamLevels, ", ")
}

// DomainParam is one per-domain override: Level is a domain name or "*".
type DomainParam struct {
	Level string `json:"level"`
	Value int    `json:"value"`
}

// Params are the per-domain overrides of a replay (Config.Params). Each
// list is applied in order ("*" entries first is the caller's choice;
// Set keeps "*" before named levels so a named level wins).
type Params struct {
	ImbalancePct []DomainParam `json:"imbalance_pct,omitempty"`
	BusyFactor   []DomainParam `json:"busy_factor,omitempty"`
}

// Setting is one parsed key=value.
type Setting struct {
	Key, Value string
}

func (s Setting) String() string { return s.Key + "=" + s.Value }

// ParseSetting splits "key=value" and checks the key and value (Apply
// cannot fail afterwards except for a level the machine lacks).
func ParseSetting(kv string) (Setting, error) {
	k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if !ok || k == "" || v == "" {
		return Setting{}, fmt.Errorf("%q: want key=value; keys: %s", kv, ParamUsage())
	}
	s := Setting{Key: k, Value: v}
	if err := s.Apply(&Config{}); err != nil {
		return Setting{}, err
	}
	return s, nil
}

// Apply sets s on cfg (on a copy of its Params lists, so configurations
// sharing a base never share state).
func (s Setting) Apply(cfg *Config) error {
	bad := func(want string) error {
		return fmt.Errorf("%s: want %s", s, want)
	}
	posInt := func(min int) (int, error) {
		n, err := strconv.Atoi(s.Value)
		if err != nil || n < min {
			return 0, bad(fmt.Sprintf("an integer >= %d", min))
		}
		return n, nil
	}
	// either sets a model option with two values, yes or no; onOff one
	// set by "on" or "off".
	either := func(dst *bool, yes, no string) error {
		switch s.Value {
		case yes, no:
			*dst = s.Value == yes
			return nil
		}
		return bad(yes + " or " + no)
	}
	onOff := func(dst *bool) error { return either(dst, "on", "off") }
	key, level, hasLevel := strings.Cut(s.Key, ".")
	if hasLevel && key != "imbalance_pct" && key != "busy_factor" {
		return fmt.Errorf("%s: unknown key %q; keys: %s", s, s.Key, ParamUsage())
	}
	if hasLevel && !validLevel(level) {
		return fmt.Errorf("%s: unknown domain level %q; levels: %s", s, level, strings.Join(ParamLevels, ", "))
	}
	switch key {
	case "imbalance_pct":
		if !hasLevel {
			return fmt.Errorf("%s: imbalance_pct needs a level (imbalance_pct.MC=117, or imbalance_pct.*=N); levels: %s", s, strings.Join(ParamLevels, ", "))
		}
		n, err := posInt(100)
		if err != nil {
			return err
		}
		cfg.Params.ImbalancePct = addDomainParam(cfg.Params.ImbalancePct, DomainParam{level, n})
	case "busy_factor":
		n, err := posInt(1)
		if err != nil {
			return err
		}
		if !hasLevel {
			level = "*"
		}
		cfg.Params.BusyFactor = addDomainParam(cfg.Params.BusyFactor, DomainParam{level, n})
	case "migration_cost":
		d, err := time.ParseDuration(s.Value)
		if err != nil || d < 0 {
			return bad("a duration >= 0 (e.g. 500us, 0.5ms)")
		}
		// Config's zero value means the default (500 µs); 1 ns is the
		// same as 0 for task_hot and the newidle gate.
		cfg.MigrationCostNS = max(d.Nanoseconds(), 1)
	case "nr_migrate":
		n, err := posInt(1)
		if err != nil {
			return err
		}
		cfg.NrMigrate = n
	case "hz":
		n, err := strconv.Atoi(s.Value)
		if err != nil || !validHZ(n) {
			return bad("one of 100, 250, 300, 1000 (CONFIG_HZ)")
		}
		cfg.HZ = n
	case "slice_protection":
		for _, v := range SliceProtections {
			if s.Value == v {
				cfg.SliceProtection = v
				return nil
			}
		}
		return bad("one of " + strings.Join(SliceProtections, ", "))
	case "newidle_ratio":
		switch s.Value {
		case "trace":
			cfg.NIRatio = 0
		case "share":
			cfg.NIRatio = -1
		case "boot":
			cfg.NIRatio = 513
		default:
			n, err := strconv.Atoi(s.Value)
			if err != nil || n < 0 || n > 1023 {
				return bad("trace, share, boot, or an integer 0..1023")
			}
			cfg.NIRatio = n + 1
		}
	case "reply_awaits":
		return onOff(&cfg.ReplyAwaits)
	case "herd_awaits":
		return onOff(&cfg.HerdAwaits)
	case "host_stall":
		return either(&cfg.HostStallCPU, "cpu", "task")
	case "fork_wait":
		return either(&cfg.NoForkWait, "off", "on")
	case "exit_preempt":
		return onOff(&cfg.ExitPreempt)
	case "eas":
		switch s.Value {
		case "auto", "on", "off":
			cfg.EAS = map[string]string{"auto": EASAuto, "on": EASOn, "off": EASOff}[s.Value]
		default:
			return bad("auto, on or off")
		}
	case "start_pelt":
		return either(&cfg.StartPELTHeavy, "heavy", "trace")
	case "exit_wake":
		return either(&cfg.ExitWakeLate, "late", "early")
	case "tick_softirq":
		return onOff(&cfg.TickSoftIRQ)
	case "tick_switch":
		return onOff(&cfg.TickSwitch)
	case "switch_charge":
		switch s.Value {
		case "on", "pools", "off":
			cfg.SwitchCharge, cfg.SwitchChargePoolsOnly = s.Value != "off", s.Value == "pools"
		default:
			return bad("on, pools or off")
		}
	case "trace_end_run_on":
		return onOff(&cfg.TraceEndRunOn)
	case "irq_cpu":
		return either(&cfg.IRQCPU, "trace", "own")
	case "irq_ipi":
		return onOff(&cfg.IRQIPI)
	case "nohz_kick":
		return either(&cfg.NohzKickIdleExit, "idle_exit", "ipi")
	case "idle_tick":
		switch s.Value {
		case "stop":
			cfg.IdleTicks = 0
		default:
			n, err := strconv.Atoi(s.Value)
			if err != nil || n < 1 || n > 1000 {
				return bad("stop or a number of ticks 1-1000")
			}
			cfg.IdleTicks = n
		}
	case "timer_slack":
		if s.Value == "off" {
			cfg.TimerSlackNS = 0
			break
		}
		d, err := time.ParseDuration(s.Value)
		if err != nil || d <= 0 || d > time.Second {
			return bad("off or a duration up to 1s (e.g. 50us)")
		}
		cfg.TimerSlackNS = d.Nanoseconds()
	case "busy_host_wait":
		return onOff(&cfg.BusyHostWait)
	case "stall_contention":
		return onOff(&cfg.StallContention)
	case "wake_stall":
		return onOff(&cfg.WakeStall)
	case "balance_phase":
		return either(&cfg.BalancePhase, "trace", "own")
	case "irq_stall":
		return either(&cfg.IRQStallAll, "all", "own")
	case "irq_flip":
		return either(&cfg.IRQFlip, "trace", "own")
	case "wake_overhead":
		return either(&cfg.SkipWakeOverhead, "skip", "keep")
	case "idle_exit":
		return either(&cfg.IdleExitSplit, "split", "pool")
	case "wakee_flips":
		if s.Value == "trace" {
			cfg.WakeeFlips = -1
			break
		}
		n, err := strconv.Atoi(s.Value)
		if err != nil || n < 0 || n > maxWakeeFlips {
			return bad(fmt.Sprintf("trace, or an integer 0..%d", maxWakeeFlips))
		}
		cfg.WakeeFlips = int64(n)
	default:
		return fmt.Errorf("%s: unknown key %q; keys: %s", s, s.Key, ParamUsage())
	}
	return nil
}

// addDomainParam returns a new list with p replacing an entry of the same
// level, "*" kept before named levels (applied first, so they win).
func addDomainParam(l []DomainParam, p DomainParam) []DomainParam {
	out := make([]DomainParam, 0, len(l)+1)
	for _, q := range l {
		if q.Level != p.Level {
			out = append(out, q)
		}
	}
	if p.Level == "*" {
		return append([]DomainParam{p}, out...)
	}
	return append(out, p)
}

func validLevel(l string) bool {
	for _, v := range ParamLevels {
		if v == l {
			return true
		}
	}
	return false
}

func validHZ(n int) bool {
	for _, v := range ValidHZ {
		if v == n {
			return true
		}
	}
	return false
}

// applyParams overrides the domains' tunables with p. A named level the
// machine does not have is an error (a typo or the wrong topology would
// otherwise change nothing silently).
func applyParams(d *model.Domains, p Params) error {
	apply := func(list []DomainParam, set func(sd *model.SchedDomain, v int), what string) error {
		for _, dp := range list {
			found := false
			for _, cd := range d.CPUs {
				for _, sd := range cd.Domains {
					if dp.Level == "*" || sd.Name == dp.Level {
						set(sd, dp.Value)
						found = true
					}
				}
			}
			if !found && dp.Level != "*" {
				return fmt.Errorf("whatif: %s.%s: the machine has no %s domain (levels: %s)", what, dp.Level, dp.Level, strings.Join(domainLevelNames(d), ", "))
			}
		}
		return nil
	}
	if err := apply(p.ImbalancePct, func(sd *model.SchedDomain, v int) { sd.ImbalancePct = v }, "imbalance_pct"); err != nil {
		return err
	}
	return apply(p.BusyFactor, func(sd *model.SchedDomain, v int) { sd.BusyFactor = v }, "busy_factor")
}

// domainLevelNames are the names of the domains cpu 0 has, bottom-up.
func domainLevelNames(d *model.Domains) []string {
	var out []string
	if len(d.CPUs) == 0 {
		return out
	}
	for _, sd := range d.CPUs[0].Domains {
		out = append(out, sd.Name)
	}
	return out
}
