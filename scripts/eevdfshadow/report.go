package main

// The shadow's tallies and their report: picks against switches, requests
// at picks, blocks, renewals and wakeup checks with the history behind
// them, printed per column (a trace, and with "vs" the replays).

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
)

// picks counts the shadow's picks against the timeline's switches.
type picks struct{ agree, disagree, unverified int }

type results struct {
	picks  map[string]*[2]picks // by how the switch came: tick, wakeup, block, idle
	wakes  map[string]*[2]wakeStats
	notCur [2]int
	// requests: at each pick, the request it has left (deadline −
	// vruntime), by group and what set the deadline.
	requests map[string]*[2]pickStats
	blocks   map[string]*[2]blockStats
	// renewals: switch-outs of a task whose request was renewed while
	// it ran (used: how far into the new request it ran).
	renewals map[string]*[2]blockStats
	held     [2]int // wakeups placed at the wakee's block
	undone   [2]int // ... undone by a later waking
	// heldNot: wakings that came while the task still ran, not taken
	// for wakeups racing its next block because the trace wakes it
	// again after that block before it runs.
	heldNot  [2]int
	leftFair [2]int // tasks taken off a cfs_rq on turning real-time
	// kept: blocks the trace shows the kernel kept queued, delayed
	// (blockEvidence); keptEligible: those the shadow's own eligibility
	// test would have dequeued.
	kept, keptEligible [2]int
	// late: wakeups whose enqueue (sleep statistics) came later than the
	// placement window after their waking.
	late [2]int
	// passes, passMoves: balance passes that moved two or more tasks
	// onto a CPU, and those tasks.
	passes, passMoves [2]int
	// dequeued: blocks the shadow's own test found not eligible that the
	// trace's sleep statistics date from the block (dequeued there).
	dequeued [2]int
	// early: blocks dequeued before a newly idle balance's first move onto
	// their CPU, as their sleep statistics date them (blockEarly).
	early [2]int
	// heldEnqueues: a replay's remote wakeups whose enqueue came after
	// their waking's instant (pending.held).
	heldEnqueues [2]int
	// queue: time-weighted entities queued while a CFS task runs.
	queue [2]struct{ busy, runnable, delayed int64 }
	// afterDelay: the picks of a task whose last block was delayed, by
	// group and how the delay ended (delayEnds).
	afterDelay map[string]*[2]delayStats
}

// How a delayed dequeue ended, as ent.delayEnd holds it.
const (
	delayPending = "still queued at its switch-in"
	// A waking found it queued (ttwu_runnable): its vruntime kept
	// (lag ≤ 0), or, its lag positive, placed again at V with lag 0
	// (DELAY_ZERO).
	delayRequeuedKept   = "requeued by a waking, its vruntime kept"
	delayRequeuedPlaced = "requeued by a waking, placed again with lag 0"
	// A pick met it first: its final dequeue (DELAY_ZERO clips a positive
	// lag); it slept on until a waking placed it.
	delayPicked = "dequeued by a pick, woken later"
)

// delayStats: at each pick after a delayed block, its lag, the time
// from that block to its first waking since (where one came) and to the
// pick.
type delayStats struct{ lag, woken, since []int64 }

// tally is m's entry for key k in column col, made on first use.
func tally[T any](m map[string]*[2]T, k string, col int) *T {
	p := m[k]
	if p == nil {
		p = &[2]T{}
		m[k] = p
	}
	return &p[col]
}

// afterDelay tallies e's pick at time at, its last block a delayed one.
func (s *shadow) afterDelay(e *ent, at int64) {
	k := group(e.comm) + ", " + e.delayEnd
	e.delayEnd = ""
	if e.guessed {
		return
	}
	d := tally(s.res.afterDelay, k, s.col)
	d.lag = append(d.lag, e.pickLag)
	if e.delayWoken > 0 {
		d.woken = append(d.woken, e.delayWoken-e.delayAt)
	}
	d.since = append(d.since, at-e.delayAt)
}

// blockStats: at each block, the lag it was picked with, how long it
// ran, its lag at the block, how many stayed queued (delayed), and the
// sleep until the next waking.
type blockStats struct {
	pickLag, ran, lag, used []int64
	// woken: from a block to the task's next waking (blocks only; none
	// where it was switched in again with no waking seen).
	woken   []int64
	delayed int
	dv      [len(dvCauses)][]int64 // V's change during the run, by cause
	comp    map[string]int64       // time × entities beside it, by group
	time    int64                  // the runs' total
}

// pickStats: at each pick, the request left and the lag.
type pickStats struct{ left, lag []int64 }

type wakeStats struct {
	n, predicted, preempted, both       int
	wakeeLag, currLag, ran, pickLag, nq []int64
	prot                                int
	// used: the running task's request used at its pick; after: by how
	// its run before that pick ended, checks and preemptions.
	used  []int64
	after map[string]*[2]int
	// lowest, highest: the others' lowest and highest lag, when there
	// are two or more; nOthers: how many (in millions, for quart).
	lowest, highest, nOthers []int64
	// The wakee's last run (its length, its lag at its pick, V's moves
	// during it by cause, its lag at the block, the lag saved, and the
	// lag lost between its pick and block); the running task's lag at
	// its switch-out before its pick, and its wait from there.
	wakeeRan, wakeePickLag   []int64
	wakeeDV                  [len(dvCauses)][]int64
	wakeeBlockLag, wakeeVlag []int64
	wakeeLoss, wakeeCharged  []int64
	currOutLag, currWait     []int64
	// unchecked: checks whose running task's pick the shadow did not
	// make (a disagreement or an unverified pick), and of those preempted.
	unchecked [2]int
	// currWaitDV: V's moves on the running task's CPU while it waited
	// before its pick, by cause (where it waited there throughout).
	currWaitDV [len(dvCauses)][]int64
	// currPrevRan, currPrevPickLag: the running task's run before that
	// wait, and its lag at that run's pick.
	currPrevRan, currPrevPickLag []int64
	// bySaved: checks, predicted and preempted, by the lag the wakee's
	// placement started from (wakeRec.wakeeSaved).
	bySaved map[string]*[3]int
}

func (s *shadow) record(w *wakeRec) {
	k := w.curr + " running, " + w.wakee + " woken"
	if w.timer {
		k += " (from the running task or an interrupt)"
	}
	st := tally(s.res.wakes, k, s.col)
	st.n++
	if w.predicted {
		st.predicted++
	}
	if w.preempted {
		st.preempted++
	}
	if w.predicted && w.preempted {
		st.both++
	}
	if w.currProt && w.currElig {
		st.prot++
	}
	st.wakeeLag = append(st.wakeeLag, w.wakeeLag)
	st.currLag = append(st.currLag, w.currLag)
	st.ran = append(st.ran, w.ran)
	st.pickLag = append(st.pickLag, w.pickLag)
	st.nq = append(st.nq, int64(w.nq)*1000000)
	st.used = append(st.used, w.currUsed)
	if len(w.others) >= 2 {
		st.lowest = append(st.lowest, w.others[0])
		st.highest = append(st.highest, w.others[len(w.others)-1])
	}
	st.nOthers = append(st.nOthers, int64(len(w.others))*1000000)
	st.wakeeRan = append(st.wakeeRan, w.wakeeRan)
	st.wakeePickLag = append(st.wakeePickLag, w.wakeePickLag)
	st.wakeeBlockLag = append(st.wakeeBlockLag, w.wakeeBlockLag)
	st.wakeeLoss = append(st.wakeeLoss, w.wakeePickLag-w.wakeeBlockLag)
	st.wakeeCharged = append(st.wakeeCharged, w.wakeeCharged)
	st.currOutLag = append(st.currOutLag, w.currOutLag)
	st.currWait = append(st.currWait, w.currWait)
	st.currPrevRan = append(st.currPrevRan, w.currPrevRan)
	st.currPrevPickLag = append(st.currPrevPickLag, w.currPrevPickLag)
	if w.currWaitKnown {
		for i, d := range w.currWaitDV {
			st.currWaitDV[i] = append(st.currWaitDV[i], d)
		}
	}
	if !w.currAgreed {
		st.unchecked[0]++
		if w.preempted {
			st.unchecked[1]++
		}
	}
	st.wakeeVlag = append(st.wakeeVlag, w.wakeeVlag)
	for i, d := range w.wakeeDV {
		st.wakeeDV[i] = append(st.wakeeDV[i], d)
	}
	if st.bySaved == nil {
		st.bySaved = map[string]*[3]int{}
	}
	if st.bySaved[w.wakeeSaved] == nil {
		st.bySaved[w.wakeeSaved] = &[3]int{}
	}
	bs := st.bySaved[w.wakeeSaved]
	bs[0]++
	if w.predicted {
		bs[1]++
	}
	if w.preempted {
		bs[2]++
	}
	if st.after == nil {
		st.after = map[string]*[2]int{}
	}
	a := w.currAfter + " (" + w.currDL + ")"
	if st.after[a] == nil {
		st.after[a] = &[2]int{}
	}
	st.after[a][0]++
	if w.preempted {
		st.after[a][1]++
	}
}

func mean(xs []int64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var t float64
	for _, x := range xs {
		t += float64(x)
	}
	return t / float64(len(xs)) / 1e6
}

// shareUnder is the percentage of xs below limit.
func shareUnder(xs []int64, limit int64) string {
	if len(xs) == 0 {
		return "-"
	}
	n := 0
	for _, x := range xs {
		if x < limit {
			n++
		}
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(len(xs)))
}

func quart(xs []int64) string {
	if len(xs) == 0 {
		return "-"
	}
	ys := append([]int64(nil), xs...)
	sort.Slice(ys, func(i, j int) bool { return ys[i] < ys[j] })
	q := func(f float64) float64 { return float64(ys[int(f*float64(len(ys)-1))]) / 1e6 }
	return fmt.Sprintf("%.2f/%.2f/%.2f", q(0.25), q(0.5), q(0.75))
}

func (res *results) print(w io.Writer, cols int) {
	fmt.Fprintln(w, "picks at switches (agree / disagree / unverified), by what ended the run")
	for _, k := range slices.Sorted(maps.Keys(res.picks)) {
		fmt.Fprintf(w, "  %-8s", k)
		for c := 0; c < cols; c++ {
			p := res.picks[k][c]
			fmt.Fprintf(w, "  %6d / %5d / %5d", p.agree, p.disagree, p.unverified)
		}
		fmt.Fprintln(w)
	}
	counts(w, cols, "runtimes of a task not running in the shadow (ignored)", func(c int) string { return fmt.Sprintf(" %d", res.notCur[c]) })
	counts(w, cols, "wakeups that came while the wakee was queued, placed at its block (undone by a later waking)", func(c int) string { return fmt.Sprintf(" %d (%d)", res.held[c], res.undone[c]) })
	counts(w, cols, "wakings that came while the wakee still ran, not taken for one racing its block (the trace wakes it again after the block)", func(c int) string { return fmt.Sprintf(" %d", res.heldNot[c]) })
	counts(w, cols, fmt.Sprintf("wakeups whose enqueue the schedstats show over %.1f ms after their waking, placed there", float64(statWindowNS)/1e6), func(c int) string { return fmt.Sprintf(" %d", res.late[c]) })
	counts(w, cols, "blocks the schedstats show the kernel kept queued (delayed), of them eligible to the shadow's own test (followed: the kernel)", func(c int) string { return fmt.Sprintf(" %d (%d)", res.kept[c], res.keptEligible[c]) })
	counts(w, cols, "blocks the shadow's own test found not eligible whose sleep the schedstats date from the block (dequeued there; followed: the kernel, with a lag of 1 ns)", func(c int) string { return fmt.Sprintf(" %d", res.dequeued[c]) })
	counts(w, cols, "blocks the schedstats date from before a newly idle balance's moves onto the CPU (dequeued before them)", func(c int) string { return fmt.Sprintf(" %d", res.early[c]) })
	counts(w, cols, "remote wakeups onto a busy CPU that a replay enqueued after their waking (its waker's host stall), placed at that enqueue's update", func(c int) string { return fmt.Sprintf(" %d", res.heldEnqueues[c]) })
	counts(w, cols, "balance passes that moved two or more tasks, attached the last detached first (their tasks)", func(c int) string { return fmt.Sprintf(" %d (%d)", res.passes[c], res.passMoves[c]) })
	counts(w, cols, "tasks that turned real-time while on a fair queue (sched_setscheduler), taken off it", func(c int) string { return fmt.Sprintf(" %d", res.leftFair[c]) })
	fmt.Fprint(w, "  while a CFS task runs, entities on its queue (running one included; time-weighted mean): runnable, delayed:")
	for c := 0; c < cols; c++ {
		q := res.queue[c]
		if q.busy > 0 {
			fmt.Fprintf(w, "  %.2f, %.2f", float64(q.runnable)/float64(q.busy), float64(q.delayed)/float64(q.busy))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "picks: n, quartiles (ms) of the request left (deadline - vruntime) and of the lag, by group and what set the deadline")
	for _, k := range slices.Sorted(maps.Keys(res.requests)) {
		fmt.Fprintf(w, "  %-40s", k)
		for c := 0; c < cols; c++ {
			ps := res.requests[k][c]
			fmt.Fprintf(w, "  %5d %s lag %s", len(ps.left), quart(ps.left), quart(ps.lag))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "blocks: n, delayed, quartiles (ms) of the lag at its pick, the run, the lag at the block, the time to the next waking (share within 0.1 ms)")
	for _, k := range slices.Sorted(maps.Keys(res.blocks)) {
		fmt.Fprintf(w, "  %s\n", k)
		for c := 0; c < cols; c++ {
			b := res.blocks[k][c]
			fmt.Fprintf(w, "    [%d] %5d %5d  picked %s  ran %s  at block %s  woken %s (%s)\n", c+1, len(b.lag), b.delayed, quart(b.pickLag), quart(b.ran), quart(b.lag), quart(b.woken), shareUnder(b.woken, 100000))
			fmt.Fprintf(w, "        V moved (mean ms):")
			printDV(w, b.dv)
			// V moves by w/W of the running task's own time: the
			// ratio is the mean of 1/(entities queued) it ran with.
			fmt.Fprintf(w, "; mean run %.3f ms, own share of V %.2f\n", mean(b.ran), mean(b.dv[0])/mean(b.ran))
			fmt.Fprintf(w, "        queued beside it (mean over its run):")
			for _, g := range slices.Sorted(maps.Keys(b.comp)) {
				if v := float64(b.comp[g]) / float64(max(b.time, 1)); v >= 0.01 {
					fmt.Fprintf(w, " %s %.2f", g, v)
				}
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w, "picks after a delayed block, by how the delay ended: n, quartiles (ms) of the lag at the pick, of the time from the block to the first waking since, and to the pick")
	for _, k := range slices.Sorted(maps.Keys(res.afterDelay)) {
		fmt.Fprintf(w, "  %-60s", k)
		for c := 0; c < cols; c++ {
			d := res.afterDelay[k][c]
			fmt.Fprintf(w, "  %5d lag %s woken %s picked %s", len(d.lag), quart(d.lag), quart(d.woken), quart(d.since))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "switch-outs after a renewal: n, quartiles (ms) of the lag at its pick, the run, the lag at the switch, the new request used")
	for _, k := range slices.Sorted(maps.Keys(res.renewals)) {
		fmt.Fprintf(w, "  %s\n", k)
		for c := 0; c < cols; c++ {
			b := res.renewals[k][c]
			fmt.Fprintf(w, "    [%d] %5d  picked %s  ran %s  at switch %s  used %s\n", c+1, len(b.lag), quart(b.pickLag), quart(b.ran), quart(b.lag), quart(b.used))
		}
	}
	fmt.Fprintln(w, "wakeups onto a CPU running a CFS task: n, shadow predicts a preemption, timeline preempts, both, running task protected; lag quartiles (ms) of the wakee and the running task, how long the running task had run, its lag at its pick, the entities queued before the wakee (the placement keeps the wakee's saved lag and lowers V by its share)")
	for _, k := range slices.Sorted(maps.Keys(res.wakes)) {
		fmt.Fprintf(w, "  %s\n", k)
		for c := 0; c < cols; c++ {
			st := res.wakes[k][c]
			fmt.Fprintf(w, "    [%d] %5d %5d %5d %5d %5d  wakee %s  running %s  ran %s  lag at its pick %s  queued %s\n", c+1, st.n, st.predicted, st.preempted, st.both, st.prot, quart(st.wakeeLag), quart(st.currLag), quart(st.ran), quart(st.pickLag), quart(st.nq))
			if st.n >= 50 {
				fmt.Fprintf(w, "        running task's request used at its pick %s; checks (preempted) by how its run before that pick ended:", quart(st.used))
				for _, a := range slices.Sorted(maps.Keys(st.after)) {
					fmt.Fprintf(w, " %s %d (%d);", a, st.after[a][0], st.after[a][1])
				}
				fmt.Fprintln(w)
				fmt.Fprintf(w, "        the running task, before its pick: lag at its switch-out %s, waited %s; picked where the shadow would not have: %d (%d preempted)\n", quart(st.currOutLag), quart(st.currWait), st.unchecked[0], st.unchecked[1])
				fmt.Fprintf(w, "        the running task's run before that wait %s (mean %.3f), its lag at that run's pick %s (mean %+.3f)\n", quart(st.currPrevRan), mean(st.currPrevRan), quart(st.currPrevPickLag), mean(st.currPrevPickLag))
				fmt.Fprintf(w, "        V moved while the running task waited (mean ms, %d waits; its lag at switch-out %+.3f, at its pick %+.3f):", len(st.currWaitDV[0]), mean(st.currOutLag), mean(st.pickLag))
				printDV(w, st.currWaitDV)
				fmt.Fprintln(w)
				fmt.Fprintf(w, "        the wakee's lag at its block %s, saved %s, lost since its pick %s\n", quart(st.wakeeBlockLag), quart(st.wakeeVlag), quart(st.wakeeLoss))
				fmt.Fprintf(w, "        checks (shadow predicts, timeline preempts) by the lag the wakee's placement started from:")
				for _, k := range slices.Sorted(maps.Keys(st.bySaved)) {
					b := st.bySaved[k]
					fmt.Fprintf(w, " %s %d (%d, %d);", k, b[0], b[1], b[2])
				}
				fmt.Fprintln(w)
				fmt.Fprintf(w, "        the others queued: n %s, lowest lag %s, highest %s\n", quart(st.nOthers), quart(st.lowest), quart(st.highest))
				fmt.Fprintf(w, "        the wakee's last run %s (mean %.3f, charged %.3f), its lag at that run's pick %s; V moved (mean ms):", quart(st.wakeeRan), mean(st.wakeeRan), mean(st.wakeeCharged), quart(st.wakeePickLag))
				printDV(w, st.wakeeDV)
				fmt.Fprintln(w)
			}
		}
	}
}

// counts prints one line of tallies: the label, then each column's.
func counts(w io.Writer, cols int, label string, col func(c int) string) {
	fmt.Fprintf(w, "  %s:", label)
	for c := 0; c < cols; c++ {
		fmt.Fprint(w, col(c))
	}
	fmt.Fprintln(w)
}

// printDV prints V's moves by cause, each the mean over the runs (ms).
func printDV(w io.Writer, dv [len(dvCauses)][]int64) {
	for i, d := range dv {
		fmt.Fprintf(w, " %s %+.3f", dvCauses[i], mean(d))
	}
}
