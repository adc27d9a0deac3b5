"""Kernel gaps detected, not inferred (README: Loss accounting, Kernel gaps).

1. Deterministic: the runq programs run (BPF_PROG_TEST_RUN) on fake tasks and runqueues
   through sequences where some of the kernel's events are left out; every counter of every
   step is asserted (tests/bpf/runq_synth.c plays the kernel).
2. Live: on this machine, every context switch is either a sched_switch event lathist saw
   or one it counted as missed_switch, against the kernel's own count of switches
   (/proc/stat ctxt, the sum of every CPU's rq->nr_switches), read outside and inside
   lathist's tracing window.
"""
import glob
import json
import os
import subprocess
import tempfile
import time

from lh import LATHIST, Lathist, RUNQWORK, check, paragraph, verbose_classes

SYNTH = os.path.join(os.path.dirname(RUNQWORK), "runq_synth")

# Every non-zero counter of each step (the rest must be 0). Worked out from each task's
# switch-ins: each one is paired, filtered, before tracing, or in exactly one loss class.
EXPECTED = {
    "paired": dict(events=1, paired=1, starts_wakeup=1, switches=1),
    # woken (seen), switched in and out unseen, woken unseen, switched in (seen) 5 ms
    # later: the start lost its switch-in, this switch-in has no start; never a 5 ms wait.
    # The task the CPU ran unseen is preempted (seen): its switch-in is a missed wait.
    "switched_since_start": dict(events=1, starts_wakeup=1, starts_preempt=1, slices=1,
                                 switches=2, missed_switch=3, unpaired_no_start=1,
                                 missed_switch_in=1, missed_wait=1),
    "missed_switch_in_and_wait": dict(events=1, paired=1, slices=1, switches=2,
                                      missed_switch=1, missed_wait=1, slice_unpaired=1),
    # b and a switched in unseen, back to the task the CPU last ran: rq->nr_switches
    # shows both; a's slice ran across them (dropped); a's unseen switch-in is a
    # missed wait (b's is found at its next event)
    "missed_switches": dict(events=1, paired=1, starts_wakeup=2, switches=2, missed_switch=2,
                            missed_wait=1, slice_unpaired=1),
    "queued_before_trace": dict(events=1, unpaired_before_trace=1, switches=1),
    "queued_while_tracing": dict(events=1, starts_preempt=1, slices=1, switches=1,
                                 unpaired_no_start=1),
    # preempted in a sleep state, the kernel leaves last_queued 0: that says nothing about
    # when the wait began, so it is a loss, not "before tracing"
    "queued_unstamped": dict(events=1, starts_preempt=1, slices=1, switches=1,
                             unpaired_no_start=1),
    # the exec'ing thread with the leader's pid and start time, its own switch count: the
    # leader's pid entry is not its state (no 40 missed waits)
    "exec_from_thread": dict(events=2, paired=2, starts_wakeup=2, starts_preempt=1, slices=2,
                             switches=3),
    # its pid changes on the CPU (exec from a thread): its switch-out follows on, no gap
    # (its pid entry stays under the pid it had; the thread of the step before is
    # preempted by it)
    "pid_changed_on_cpu": dict(events=1, paired=1, starts_wakeup=1, starts_preempt=1, slices=2,
                               switches=2),
    # an exec from a thread whose leader's last switch comes first: the leader's pid entry
    # stays for the thread (signal->group_exec_task), whose switch-in is no missed wait
    "exec_leader_died_first": dict(events=4, paired=4, starts_wakeup=3, starts_preempt=1,
                                   slices=4, switches=6),
    "exit_with_start": dict(starts_wakeup=1, missed_switch_in=1),
    "wakeup_while_queued": dict(events=3, paired=2, starts_wakeup=1, starts_preempt=3,
                                wakeup_while_queued=1, slices=2, switches=3, missed_switch=1,
                                unpaired_no_start=1),
    "woken_twice": dict(events=2, paired=2, starts_wakeup=2, starts_preempt=1, slices=2,
                        switches=2, overwritten_start=1),
    "dead": dict(slices=1, switches=1),
    # raw_tp: preempted after its exit and switched back in unseen: its last switch drops
    # that preemption's start (it had vanished, with only the gap counted)
    "preempted_after_exit": dict(events=1, paired=1, starts_wakeup=1, starts_preempt=1,
                                 slices=1, switches=3, missed_switch=1, missed_switch_in=1),
    # --per-thread: a's unseen switch-in (missed_wait) is charged to a's key, b's switch-in
    # without a start (its preemption unseen) to b's (histograms are keyed: hist_count 0)
    "keyed_losses_of_one_task": dict(events=3, paired=2, starts_wakeup=2, slices=1, switches=3,
                                     missed_switch=1, unpaired_no_start=1, missed_wait=1,
                                     slice_unpaired=1),
    # the histogram map full: c's paired wait is refused, counted and charged to c's key
    "keyed_wait_refused_by_full_map": dict(events=1, starts_wakeup=1, switches=1,
                                           hist_map_full=1),
    # d's start after its end: negative_delta, charged to d's key; c's slice, which the
    # full map refuses too (hist_map_full), is not a wait: charged to no key
    "keyed_negative_delta": dict(events=1, starts_wakeup=1, switches=1, negative_delta=1,
                                 hist_map_full=1),
}
CHARGED = {"keyed_losses_of_one_task": {"4001": 1, "4002": 1},
           "keyed_wait_refused_by_full_map": {"4001": 1, "4002": 1, "4003": 1},
           "keyed_negative_delta": {"4001": 1, "4002": 1, "4003": 1, "4004": 1}}


def test_synthetic_kernel_gaps():
    """Each new loss class and the gap detector, provoked deterministically."""
    p = subprocess.run([SYNTH], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"runq_synth: {p.stderr}")
    steps = {}
    for line in p.stdout.splitlines():
        d = json.loads(line)
        steps[d.pop("step")] = d
    # the sweeps alone on a real child woken 5 times with no event program attached: every
    # switch-in the kernel counted (/proc) since the start sweep is missed_wait, and the
    # end sweep saw the child
    sw = steps.pop("sweeps", None)
    check(sw and sw["switch_ins"] >= 5 and sw.get("missed_wait") == sw["switch_ins"] and
          sw["seen"], f"sweeps: {sw}")
    # the same steps on the programs of a kernel whose sched_switch has no prev_state
    # (before 5.18: core_fixes.bpf.h reads the task's state): the same counters
    state = {k[len("state_"):]: steps.pop(k) for k in list(steps) if k.startswith("state_")}
    check(state and list(state) == [k for k in EXPECTED if not k.startswith("keyed_")],
          f"state_ steps {list(state)}")
    for name, got in state.items():
        want = {k: v for k, v in steps[name].items() if k != "hist_max_ns"}
        got = {k: v for k, v in got.items() if k != "hist_max_ns"}
        check(got == want, f"state_{name}: {got}, with prev_state: {want}")
    check(list(steps) == list(EXPECTED), f"steps {list(steps)}")
    for name, want in EXPECTED.items():
        got = dict(steps[name])
        hist_count, hist_max, entry = got.pop("hist_count"), got.pop("hist_max_ns"), got.pop("entry")
        charged = got.pop("charged", None)
        check(got == want, f"{name}: counters {got}, want {want}")
        check(charged == CHARGED.get(name), f"{name}: charged to keys {charged}")
        if not name.startswith("keyed_"):
            check(hist_count == want.get("paired", 0), f"{name}: {hist_count} waits in the "
                                                        f"histograms, paired {want.get('paired', 0)}")
        # the false wait (>= 5 ms, the harness sleeps between its events) is never paired:
        # that step pairs nothing at all. Other steps' real waits last as long as the
        # harness takes between two events, which under load can pass 5 ms: not timed
        if name.endswith("switched_since_start"):
            check(hist_max == 0 and hist_count == 0, f"{name}: a wait of {hist_max} ns was "
                  f"paired")
        check(entry == (name not in ("dead", "pid_changed_on_cpu", "preempted_after_exit")),
              f"{name}: pid entry left: {entry}")


def ctxt():
    with open("/proc/stat") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("ctxt "))


def test_missed_switches_close_with_kernel_count():
    """switches seen + missed_switch = the kernel's own count of context switches. lathist's
    window lies inside [before start, after exit] and contains [after 'Tracing', before
    the signal], so the sum lies between the two ctxt deltas; on every attach path."""
    for attach in ("tp_btf", "raw_tp"):
        outer0 = ctxt()
        tool = Lathist("runq", "-f", "json", "--attach", attach).start()
        inner0 = ctxt()
        work = subprocess.Popen([RUNQWORK, "mix", "1", "2", "1", "400"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        work.stdout.readline()
        work.stdin.write(b"go\n")
        work.stdin.flush()
        work.communicate(timeout=60)
        inner1 = ctxt()
        rc, out, err = tool.stop()
        outer1 = ctxt()
        check(rc == 0, f"{attach}: rc {rc}: {err}")
        loss = json.loads(out)["loss"]
        total = loss["switches"] + loss["missed_switch"]
        check(inner1 - inner0 <= total <= outer1 - outer0,
              f"{attach}: {loss['switches']} seen + {loss['missed_switch']} missed = {total}, "
              f"kernel counted {inner1 - inner0}..{outer1 - outer0}")
        check(sum(loss["missed_switch_per_cpu"]) == loss["missed_switch"] and
              len(loss["missed_switch_per_cpu"]) == os.cpu_count(),
              f"{attach}: per CPU {loss['missed_switch_per_cpu']} vs {loss['missed_switch']}")


def pid1_counts():
    """{tid: (pcount, switches)} of PID 1's threads now: schedstat's pcount (field 3) and
    the switch count (voluntary + nonvoluntary context switches in status). A thread has
    had switches (+ 1 while it runs) switch-ins; pcount counts them but for those after a
    preemption in a sleep state (kernel/sched/stats.h sched_info_arrive(), since 5.14)."""
    out = {}
    for t in glob.glob("/proc/1/task/*"):
        try:
            with open(os.path.join(t, "schedstat")) as f:
                pcount = int(f.read().split()[2])
            with open(os.path.join(t, "status")) as f:
                sw = sum(int(l.split()[1]) for l in f if l.split()[0].endswith("ctxt_switches:"))
        except (OSError, ValueError, IndexError):
            continue
        out[int(os.path.basename(t))] = (pcount, sw)
    return out


def test_pid1_threads_close_within_losses():
    """-p 1 --per-thread, on every path: PID 1's threads (on this VM kind, the threads no
    switch-out of which the kernel reports) have no wait counted nowhere. Per thread,
    lathist's count is at most its switch count's growth over the window around lathist
    (+ 1: it may run at a reading), and its count plus the losses lathist reported covers
    its pcount's growth over the window inside it (pcount can only count fewer)."""
    for attach in ("tp_btf", "raw_tp"):
        outer0 = pid1_counts()
        tool = Lathist("runq", "-p", "1", "--per-thread", "-f", "json", "--attach", attach).start()
        inner0 = pid1_counts()
        time.sleep(2)
        inner1 = pid1_counts()
        rc, out, err = tool.stop()
        outer1 = pid1_counts()
        check(rc == 0, f"{attach}: rc {rc}: {err}")
        doc = json.loads(out)
        counts = {}
        for h in doc["histograms"]:
            counts[h["key"]["tid"]] = counts.get(h["key"]["tid"], 0) + h["count"]
        # this VM's kernel hides PID 1's threads from BPF task iterators too: then
        # lathist must say so (hidden_tasks, checked against /proc), and their waits
        # after their last event seen cannot be counted; elsewhere nothing is hidden
        alive = [t for t in outer0 if t in outer1]
        hidden = doc["loss"]["hidden_tasks"]
        check(hidden in (0, len(alive)), f"{attach}: {hidden} hidden of PID 1's "
                                         f"{len(alive)} threads")
        budget = doc["loss"]["lost"]
        for tid in inner1:
            got = counts.get(tid, 0)
            inner = inner1[tid][0] - inner0.get(tid, (0, 0))[0]
            outer = outer1.get(tid, inner1[tid])[1] - outer0.get(tid, (0, 0))[1] + 1
            check(got <= outer, f"{attach}: PID 1 thread {tid}: {got} waits, pcount grew {outer}")
            if hidden:
                continue
            budget -= max(0, inner - got)
            check(budget >= 0, f"{attach}: PID 1 thread {tid}: {got} waits, pcount grew "
                               f"{inner}: more missing than the {doc['loss']['lost']} losses "
                               f"reported: {doc['loss']}")


def bounds(h, permille, lost):
    """(low, high) slot lo_ns of the percentile with `lost` events below all / above all, from
    the histogram's slots: the documented rule, recomputed here (high None: unbounded)."""
    rank = -(-(h["count"] + lost) * permille // 1000)
    slots = sorted(h["slots"], key=lambda s: s["lo_ns"])
    cum, low, high = lost, 0, None	# below: the lost come first (in slot 0)
    for s in slots:
        if cum >= rank:
            break
        cum += s["count"]
        low = s["lo_ns"]
    cum = 0
    for s in slots:
        cum += s["count"]
        if cum >= rank:
            high = s["lo_ns"]
            break
    return low, high


def test_quiet_run_says_what_it_could_not_see():
    """A quiet `runq -d 2` says `no loss`, or names each non-zero loss class with its count
    in one loss line and marks '?' exactly the percentiles the losses could move (the
    bounds of -v's lines); a kernel gap gets one line with the same numbers as JSON. The
    JSON bounds match the rule recomputed from the slots (docs/losses.md), the text
    (through `lathist report`) says them, and no zero class is printed without -v."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "quiet.json")
        p = subprocess.run([LATHIST, "runq", "-d", "2", "-f", "json", "-o", path],
                           capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, p.stderr)
        with open(path) as f:
            doc = json.load(f)
        p = subprocess.run([LATHIST, "report", path], capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, p.stderr)
        text = p.stdout
        p = subprocess.run([LATHIST, "report", "-v", path], capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 0, p.stderr)
        verbose = p.stdout
    loss = doc["loss"]
    lost = loss["lost"]
    line = paragraph(text, "lost ")
    check((lost == 0) == ("no loss" in text) and (lost > 0) == (line is not None),
          f"lost {lost} but the text says:\n{text[-600:]}")
    classes = verbose_classes(verbose)
    check(classes and all(classes[n][0] == loss[n] for n in classes),
          f"-v table {classes} vs JSON {loss}")
    for name, (value, kind) in classes.items():
        if kind == "loss":	# every non-zero class named with its count; no zero one
            check((f"{name} {value} (" in (line or "")) == (value > 0) and
                  (value > 0 or name not in text), f"{name} {value}: loss line {line!r}")
    check(len(text.splitlines()) < len(verbose.splitlines()), "-v shows nothing more")
    for h in doc["histograms"]:
        check(h["lost"] == lost, f"{h['name']}: lost {h['lost']}, the run lost {lost} "
                                 f"(every class here may hold a wait)")
        check(h["max_ns_high"] == (h["max_ns"] if not lost else None), f"max bound {h}")
        if not h["count"]:	# no percentile: the text says the losses could be here
            check(not lost or f"(no events; {lost} lost could have been here)" in text,
                  f"empty {h['name']}: {text[-400:]}")
            continue
        head = text.splitlines().index(next(l for l in text.splitlines()
                                            if l.startswith(h["name"] + ": ")))
        stats = next(l for l in text.splitlines()[head:] if l.strip().startswith("count "))
        for name, q in (("p50", 500), ("p90", 900), ("p99", 990), ("p99.9", 999)):
            pc = h["percentiles"][name]
            low, high = bounds(h, q, lost)
            check(pc["low"]["lo_ns"] == low and
                  (pc["high"] and pc["high"]["lo_ns"]) == high,
                  f"{h['name']} {name}: {pc} vs recomputed low {low} high {high}")
            cell = stats.split(f"  {name} ")[1].split("  ")[0]
            check(cell.endswith("?") == (low != high), f"{name}: {cell!r}, bounds {low} {high}")
            if lost:
                vl = next((l for l in verbose.splitlines() if l.strip().startswith(name + " ")),
                          "")
                check(f"{lost} lost" in vl, f"{name}: no bound in -v's text: {vl!r}")
    hidden, gap = loss["hidden_tasks"], loss["missed_switch"]
    line = paragraph(text, "kernel gap: ")
    check((hidden > 0 or gap > 0) == (line is not None), f"gaps {hidden} {gap}: {line!r}")
    check((hidden > 0) == (f"{hidden} traced task" in (line or "")),
          f"hidden_tasks {hidden}, text line {line!r}")
    if gap:
        check(f"kernel gap: {gap} of {gap + loss['switches']} context switches" in line,
              f"gap line {line!r} vs {gap} missed of {loss['switches']} seen")
        for cpu, n in enumerate(loss["missed_switch_per_cpu"][:8]):
            check((f"cpu {cpu}: {n}" in line) == (n > 0), f"cpu {cpu}: {n} vs {line!r}")


def test_per_thread_bounds_use_their_own_losses():
    """--per-thread: each histogram's L is the losses charged to its key plus those charged
    to no key (a loss of one thread cannot be another's wait); its bounds follow the rule."""
    p = subprocess.run([LATHIST, "runq", "--per-thread", "-d", "2", "-f", "json"],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, p.stderr)
    doc = json.loads(p.stdout)
    loss = doc["loss"]
    charged = loss.get("lost_charged_to_keys", 0)
    table = {(c["tid"], c["start_ns"]): c["lost"] for c in loss.get("charged_to_keys", [])}
    check(len(table) == len(loss.get("charged_to_keys", [])) and sum(table.values()) == charged,
          f"charged_to_keys {loss.get('charged_to_keys')} vs lost_charged_to_keys {charged}")
    per_key = {}
    for h in doc["histograms"]:
        k = (h["key"]["tid"], h["key"]["start_ns"])
        check(per_key.setdefault(k, h["key_lost"]) == h["key_lost"],
              f"two charges for one key: {h['key']}")
        check(h["key_lost"] == table.get(k, 0), f"{h['key']}: key_lost {h['key_lost']}, "
              f"charged_to_keys {table.get(k, 0)}")
        check(h["lost"] == h["key_lost"] + loss["lost"] - charged,
              f"{h['name']} {h['key']}: L {h['lost']}, own {h['key_lost']}, run {loss['lost']}, "
              f"charged to keys {charged}")
        for name, q in (("p50", 500), ("p99", 990)):
            low, high = bounds(h, q, h["lost"])
            pc = h["percentiles"][name]
            check(pc["low"]["lo_ns"] == low and (pc["high"] and pc["high"]["lo_ns"]) == high,
                  f"{h['name']} {name}: {pc} vs low {low} high {high}")
    check(sum(per_key.values()) <= charged <= loss["lost"],
          f"keys' charges {sum(per_key.values())}, charged {charged}, lost {loss['lost']}")


def test_sweep_that_cannot_load_is_disclosed():
    """A kernel may refuse one kind of BPF iterator (a build of this VM's kernel refused
    iter/bpf_map_elem, on which the bio end sweep was built, and the whole tp_btf load
    failed): a sweep that cannot load leaves the run going, and the output says
    which loss class it leaves uncounted (LATHIST_TEST=no-sweep acts as a refusal). Without it,
    nothing is said."""
    for verb, cls in (("runq", "missed_wait"), ("bio", "missed_completion")):
        p = subprocess.run([LATHIST, verb, "-d", "0.3", "-f", "json"], capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == 0, p.stderr)
        doc = json.loads(p.stdout)
        check(doc["meta"]["unchecked"] is None and
              set(doc["meta"]["attach"].values()) == {"tp_btf"}, f"{verb}: {doc['meta']}")
        p = subprocess.run([LATHIST, verb, "-d", "0.3"], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, LATHIST_TEST="no-sweep"))
        line = next((l for l in p.stdout.splitlines() if l.startswith("NOT CHECKED: ")), "")
        check(p.returncode == 0 and cls in line and "Operation not permitted" in line,
              f"{verb}: rc {p.returncode}, {line!r} {p.stderr}")
