# Counts, with perf's own Python scripting, the stalls real-time wakees
# woken by an interrupt on a busy CPU waited through before their
# switch-in: an independent reader for whatif's StallModel.IRQWakeStall
# and IRQWakeStallsNS (noise.go; TestIRQWakeStallsOnFixture asserts what
# it printed for guest-D r2's stress-ng):
#
#     zcat fixtures/kernels/repeats/guest-D-1s8c1t/r2/stressng-mix.perf.data.gz > /tmp/d2.data
#     perf script -s scripts/irqstalls/check.py -i /tmp/d2.data
#
# A sched_waking written in hard-IRQ or softirq context (common_flags
# 0x08 or 0x10) for a real-time task (prio below 100) last seen switched
# out asleep, targeting the CPU writing it while that CPU runs a task, is
# followed to that CPU's next sched_switch; if that switch is to the
# wakee it is counted, and its longest stretch between two consecutive
# events of that CPU since the waking is a stall when 0.5 ms or more.
import os
import sys

sys.path.append(os.environ['PERF_EXEC_PATH'] + '/scripts/python/Perf-Trace-Util/lib/Perf/Trace')
from perf_trace_context import *  # noqa: E402,F401,F403

TOLERANCE_NS = 500000
cur = {}     # cpu -> running pid
last = {}    # cpu -> time of its last event
wait = {}    # cpu -> [wakee pid, longest silence so far]
asleep = {}  # pid -> last switched out not runnable
counted = 0
stalls = []


def event(cpu, t, name, context, f):
    global counted
    w = wait.get(cpu)
    if w is not None and cpu in last:
        w[1] = max(w[1], t - last[cpu])
    if name == 'sched__sched_switch':
        if w is not None:
            if f['next_pid'] == w[0]:
                counted += 1
                if w[1] >= TOLERANCE_NS:
                    stalls.append(w[1])
            del wait[cpu]
        cur[cpu] = f['next_pid']
        asleep[f['prev_pid']] = f['prev_state'] != 0
        asleep[f['next_pid']] = False
    elif name == 'sched__sched_waking':
        p = f['pid']
        if (common_flags(context) & 0x18 and f['target_cpu'] == cpu and f['prio'] < 100
                and cur.get(cpu, 0) > 0 and asleep.get(p, True) and cpu not in wait):
            wait[cpu] = [p, 0]
    last[cpu] = t


def trace_unhandled(event_name, context, fields, sample):
    s = sample['sample']
    event(s['cpu'], s['time'], event_name, context, fields)


def trace_end():
    stalls.sort()
    print("counted", counted, "stalled", len(stalls), "stalls_ns", stalls)
