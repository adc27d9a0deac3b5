"""lathist runq against the kernel's own accounting (schedstat), on both attach paths.

Oracle (../shared/DESIGN.md): pairing wakeup or preempted switch-out with the next
switch-in gives exactly pcount waits per thread; summed over all threads on one CPU
the wait time equals the sum of their run_delay within about 1%; per thread, a wait
that follows a preempting wakeup is recorded as ~0 by run_delay (rq clock-update skip)
and charged to the preempted thread instead, so the excess over run_delay is at most
pcount x a small bound, and a thread is never far below its run_delay.
"""
import json
import os
import signal
import subprocess
import tempfile
import time

from lh import (Lathist, Workload, by_id, check, per_task, run, traced)

ATTACH = ("tp_btf", "raw_tp")
CPU = 1 if os.cpu_count() > 1 else 0
# after its last schedstat read a thread may still be switched out and in before exit
COUNT_SLACK = 3
PER_WAIT_BOUND_NS = 50_000


def check_schedstat(rows, tasks, roles):
    """Per-thread counts and sums against schedstat; returns (sum lathist, sum run_delay)."""
    total_tool = total_kernel = 0
    for r in rows:
        if r["role"] not in roles:
            continue
        t = tasks.get(r["tid"])
        check(t is not None, f"thread {r['tid']} ({r['role']}) has no histogram")
        check(0 <= t["count"] - r["pcount"] <= COUNT_SLACK,
              f"tid {r['tid']} {r['role']}: count {t['count']} vs schedstat pcount {r['pcount']}")
        excess = t["sum_ns"] - r["run_delay_ns"]
        check(excess <= r["pcount"] * PER_WAIT_BOUND_NS + 2_000_000,
              f"tid {r['tid']} {r['role']}: sum {t['sum_ns']} ns exceeds run_delay "
              f"{r['run_delay_ns']} ns by more than pcount x 50 us")
        check(t["sum_ns"] >= 0.95 * r["run_delay_ns"] - 2_000_000,
              f"tid {r['tid']} {r['role']}: sum {t['sum_ns']} ns far below run_delay "
              f"{r['run_delay_ns']} ns")
        total_tool += t["sum_ns"]
        total_kernel += r["run_delay_ns"]
    return total_tool, total_kernel


def mix_oracle(attach):
    rows, doc = traced(Workload("mix", CPU, 2, 1, 1500), "--per-thread", "--attach", attach)
    check(doc["meta"]["attach"]["sched_switch"] == attach, f"attach type in meta: {doc['meta']['attach']}")
    tasks = by_id(per_task(doc))
    tool, kernel = check_schedstat(rows, tasks, ("spinner", "sleeper"))
    check(kernel > 100_000_000, f"workload produced too little wait ({kernel} ns) to test")
    check(abs(tool - kernel) <= 0.015 * kernel,
          f"sum of waits {tool} ns vs sum of run_delay {kernel} ns: off by "
          f"{100.0 * (tool - kernel) / kernel:.2f}%")
    sleeper = next(r for r in rows if r["role"] == "sleeper")
    wake = tasks[sleeper["tid"]]["kinds"]["wakeup"]["count"]
    check(wake >= 0.9 * sleeper["pcount"], f"sleeper: {wake} wakeup waits of {sleeper['pcount']}")
    check(doc["loss"]["lost"] == 0 and not doc["bias"]["flag"], f"losses: {doc['loss']}")


def test_mix_schedstat_tp_btf():
    mix_oracle("tp_btf")


def test_mix_schedstat_raw_tp():
    mix_oracle("raw_tp")


def preempt_only(attach):
    """C2: two CPU-bound threads on one CPU: only preemption waits."""
    rows, doc = traced(Workload("mix", CPU, 2, 0, 1000), "--per-thread", "--attach", attach)
    tasks = by_id(per_task(doc))
    check_schedstat(rows, tasks, ("spinner",))
    for r in rows:
        kinds = tasks[r["tid"]]["kinds"]
        pre = kinds.get("preempt", {}).get("count", 0)
        wake = kinds.get("wakeup", {}).get("count", 0)
        check(wake <= 1, f"tid {r['tid']}: {wake} wakeup waits for a thread that never sleeps")
        check(pre >= 10 and abs(pre - (r["pcount"] - wake)) <= COUNT_SLACK,
              f"tid {r['tid']}: {pre} preemption waits vs pcount {r['pcount']}")


def test_preempt_only_tp_btf():
    preempt_only("tp_btf")


def test_preempt_only_raw_tp():
    preempt_only("raw_tp")
