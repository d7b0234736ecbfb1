#!/usr/bin/env python3
"""Counts the wakeup path's choices from perf's own `perf script` text.

An independent reader for `replay latency`'s wake_choices ("Wakeup
placement") and the `wake: kept/pulled/other` and `wake: stayed/moved` rows
of `replay whatif --validate` (analysis/wakechoice.go;
TestWakeChoicesOnARealTrace and TestWakeChoicesOnFixtures assert the counts
it printed):

    perf script -i FILE -F comm,tid,cpu,time,event,trace | python3 scripts/wakechoice/check.py
    replay script -i sim.arrow | python3 scripts/wakechoice/check.py   (a replay's output)

A sched_waking of a task last seen switched out asleep (not runnable, not
woken since) names its CPU before the choice (target_cpu); the choice moved
it if the next record written on the waking CPU is that task's
sched_migrate_task (its dest_cpu), else it stayed there. Forks, wakings of
running or queued tasks and of tasks not seen yet are left out.
"""
import re
import sys

LINE = re.compile(r'^\s*(.*?)\s+(\d+)(?:/\d+)?\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\S+):(.*)$')
SWITCH = re.compile(r'prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)')
WAKING = re.compile(r' pid=(\d+) prio=-?\d+ target_cpu=(\d+)')
MIGRATE = re.compile(r' pid=(\d+) prio=-?\d+ orig_cpu=(\d+) dest_cpu=(\d+)')
PID = re.compile(r' pid=(\d+)')


def main(lines):
    asleep = {}   # pid -> True when last switched out not runnable
    pending = {}  # waking cpu -> (pid, cpu before the choice)
    n = dict(kept=0, pulled=0, elsewhere=0, stayed=0, moved=0)

    def book(cpu, dest):
        pid, prev = pending.pop(cpu)
        if dest is None:
            dest = prev
        if prev == cpu:
            n['stayed' if dest == cpu else 'moved'] += 1
        elif dest == prev:
            n['kept'] += 1
        elif dest == cpu:
            n['pulled'] += 1
        else:
            n['elsewhere'] += 1

    for line in lines:
        m = LINE.match(line)
        if not m:
            continue
        cpu, ev, rest = int(m.group(3)), m.group(5), m.group(6)
        if cpu in pending:
            mm = MIGRATE.search(rest) if ev == 'sched_migrate_task' else None
            pid = pending[cpu][0]
            book(cpu, int(mm.group(3)) if mm and int(mm.group(1)) == pid else None)
        if ev == 'sched_switch':
            s = SWITCH.search(rest)
            prev, state, nxt = int(s.group(1)), s.group(2), int(s.group(3))
            if prev:
                asleep[prev] = not state.startswith('R')
            if nxt:
                asleep[nxt] = False
        elif ev in ('sched_wakeup', 'sched_wakeup_new'):
            asleep[int(PID.search(rest).group(1))] = False
        elif ev == 'sched_waking':
            w = WAKING.search(rest)
            pid, prev = int(w.group(1)), int(w.group(2))
            was = asleep.get(pid)
            asleep[pid] = False
            if pid and was:
                pending[cpu] = (pid, prev)
    for cpu in list(pending):
        book(cpu, None)
    print('kept/pulled/other %(kept)d/%(pulled)d/%(elsewhere)d stayed/moved %(stayed)d/%(moved)d' % n)


if __name__ == '__main__':
    main(open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin)
