#!/usr/bin/env python3
"""`make bench`: lathist side by side with the tools its users know, in one run, as the
tables README.md's Performance section shows.

Every figure is a ratio or a difference against a baseline measured in the same run:
conditions are interleaved (round r runs them in order, round r+1 in reverse), and each
cell is the median over ROUNDS rounds with the min and max in brackets.

1. runq hot path: `taskset -c 1 perf bench sched pipe -l LOOPS`. End to end: each condition's
   bench paired with one without any tracer right before it, in ns added per context switch,
   and its per-round ratio to bpftrace's runqlat.bt. Program time: the tracer's own programs
   (found by its file descriptors, so no other tracer is counted) with
   kernel.bpf_stats_enabled=1 (whose own cost is in each run): ns per run of the switch and
   wakeup programs, and all of its programs' time per context switch. Two floors: three
   empty tp_btf programs, and the same three each reading bpf_ktime_get_ns() once (the
   clock floor); program time is also given against runqlat.bt above the empty floor.
2. Per-thread keys at scale: the same program time with THREADS live threads (runqwork crowd,
   each woken every 100 ms), lathist --per-thread against libbpf-tools runqlat -L.
3. Loader: CPU (share of one CPU, /proc/PID/task/*/schedstat) and peak RSS (VmHWM) of
   `--per-thread -i 1` beside 1,000 and THREADS live threads, text and -f json -o, against
   libbpf-tools `runqlat -L 1`; and the total grouping under the pipe bench.
4. Records: loader CPU per record for `--slower-than 0`, JSON (--events) and text.
5. bio: fio 4 KiB O_DIRECT random reads (psync, depth 1) on the fastest device there is
   (null_blk where it loads, else a loop device on /dev/shm); IOPS loss against a paired
   baseline, and program time per I/O, against bpftrace (block tracepoints) and libbpf-tools
   biolatency.
6. report: time and peak RSS to merge a series of 1k, 10k and 86.4k intervals (a real
   interval line repeated with consecutive spans), and 10 files of 10k keys.
7. Start-up: exec to the "Tracing" line, lathist against runqlat and runqlat.bt.
8. Fork-heavy: a shell starting FORKS processes (/bin/true) one after the other; program
   time per process started (every program of the tracer, over the loop) and the
   sched_wakeup_new program's ns per run, against runqlat.bt and libbpf-tools runqlat.

Environment: ROUNDS (5), LOOPS (200000), THREADS (10000), SECONDS (4, per fio and loader
run), FORKS (2000), RUNQLAT / BIOLATENCY (libbpf-tools builds; default /usr/sbin/runqlat, biolatency),
ONLY (comma-separated section numbers), BASE_LATHIST (another lathist binary: its default runq
is a condition of sections 1 and 8; `make bench BASE=REV` builds REV for it). Needs root, perf,
bpftrace, fio, libbpf-tools.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import benchlib
from benchlib import (EMPTY, LATHIST, LOOPS, ROOT, BpfStats, ctxt, loop_device, mount_tracefs,
                      pipe_bench)
from benchlib import Tracer as _Tracer

ROUNDS = int(os.environ.get("ROUNDS", "5"))
THREADS = int(os.environ.get("THREADS", "10000"))
SECONDS = float(os.environ.get("SECONDS", "4"))
RUNQLAT = os.environ.get("RUNQLAT", "/usr/sbin/runqlat")
# another lathist build (make bench BASE=REV builds one) to compare runq's default against
BASE_LATHIST = os.environ.get("BASE_LATHIST", "")
BASE_NAME = f"lathist runq, {os.environ.get('BASE', 'base')} build"
BIOLATENCY = os.environ.get("BIOLATENCY", "/usr/sbin/biolatency")
FORKS = int(os.environ.get("FORKS", "2000"))
SECTIONS = range(1, 9)
ONLY = set()	# ONLY's sections (only_sections()); empty: all
RUNQWORK = os.path.join(ROOT, "build", "tests", "runqwork")
# the empty programs, each reading bpf_ktime_get_ns() once a run: what timing every
# wakeup and switch costs at the least
CLOCK_FLOOR = "3 tp_btf programs reading the clock once (clock floor)"
HERE = os.path.dirname(os.path.abspath(__file__))


class Tracer(_Tracer):
    """benchlib's Tracer whose output is read on after it is ready: a tool that prints
    (runqlat -L 1 per thread, every second) must not block on a full pipe."""

    def __enter__(self):
        super().__enter__()
        self.drains = [threading.Thread(target=lambda f=f: f.read(), daemon=True)
                       for f in (self.p.stdout, self.p.stderr)]
        for d in self.drains:
            d.start()
        return self

    def __exit__(self, *exc):
        self.p.send_signal(2)
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        for d in self.drains:
            d.join(timeout=5)


def wanted(section):
    return not ONLY or section in ONLY


def say(*a):
    print(*a, file=sys.stderr, flush=True)


def cell(xs, fmt="{:.0f}"):
    """median (min-max) of xs."""
    xs = [x for x in xs if x == x]
    if not xs:
        return "n/a"
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}–{fmt.format(max(xs))})"


def prog_ids(pid):
    """BPF program ids a process holds open (its /proc/PID/fd links and fdinfo)."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                ids.update(int(l.split()[1]) for l in f if l.startswith("prog_id:"))
        except OSError:
            pass
    return ids


def runs(ids):
    """{program name: (run_cnt, run_time_ns)} of the programs with these ids."""
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True,
                                      text=True, check=True).stdout)
    return {p.get("name", str(p["id"])): (p.get("run_cnt", 0), p.get("run_time_ns", 0))
            for p in progs if p["id"] in ids}


def per_run(before, after, word, skip="new"):
    """ns per run of the programs whose name holds word (not skip) between two runs()."""
    names = [n for n in after if word in n and skip not in n]
    cnt = sum(after[n][0] - before.get(n, (0, 0))[0] for n in names)
    t = sum(after[n][1] - before.get(n, (0, 0))[1] for n in names)
    return t / cnt if cnt else float("nan")


def total_ns(before, after):
    return sum(after[n][1] - before.get(n, (0, 0))[1] for n in after)


def cpu_ns(pid):
    """On-CPU ns of every thread of pid (/proc/PID/task/*/schedstat field 1)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def hwm_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmHWM:")).split()[1])


def runqlat_bt():
    """Debian's runqlat.bt needs kernel headers for one constant; BTF has the rest."""
    text = open("/usr/sbin/runqlat.bt").read().replace("#include <linux/sched.h>",
                                                       "#define TASK_RUNNING 0")
    f = tempfile.NamedTemporaryFile("w", suffix=".bt", delete=False)
    f.write(text)
    f.close()
    return f.name


def libbpf_tool(path, *args):
    """A libbpf-tools tool, line-buffered (it says "Tracing ..." on a pipe only then)."""
    return Tracer(["stdbuf", "-oL", path, *args], "Tracing", "stdout")


class Crowd:
    """runqwork crowd N 100: N live threads, each woken every 100 ms, until the end."""

    def __init__(self, n):
        self.n = n

    def __enter__(self):
        self.p = subprocess.Popen([RUNQWORK, "crowd", str(self.n), "100"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.p.stdout.readline().decode()
        if not line.startswith("ready"):
            raise RuntimeError(f"runqwork crowd said {line!r}")
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        self.p.communicate(b"go\n", timeout=120)


def runq_conditions(bt):
    """name -> tracer factory; runqlat.bt is the reference of the ratio column."""
    shm = tempfile.mkdtemp(prefix="lathist-bench-", dir="/dev/shm")
    c = {
        "3 empty tp_btf programs (floor)": lambda: Tracer([EMPTY, "sched"], "attached"),
        CLOCK_FLOOR: lambda: Tracer([EMPTY, "sched-clock"], "attached"),
        "lathist runq": lambda: Tracer([LATHIST, "runq"], "Tracing"),
        "lathist runq --per-thread": lambda: Tracer([LATHIST, "runq", "--per-thread"], "Tracing"),
        "lathist runq --slower-than 1ms": lambda: Tracer(
            [LATHIST, "runq", "--slower-than", "1ms", "--events", os.path.join(shm, "e.jsonl"),
             "-o", os.path.join(shm, "doc.txt")], "Tracing"),
        "lathist runq --counters cpu-clock": lambda: Tracer(
            [LATHIST, "runq", "--counters", "cpu-clock"], "Tracing"),
        "bpftrace runqlat.bt": lambda: Tracer(["bpftrace", bt], "Attaching", "stdout", 1.0),
    }
    if os.access(RUNQLAT, os.X_OK):
        c["libbpf-tools runqlat"] = lambda: libbpf_tool(RUNQLAT)
        c["libbpf-tools runqlat -L"] = lambda: libbpf_tool(RUNQLAT, "-L")
    if BASE_LATHIST:
        c[BASE_NAME] = lambda: Tracer([BASE_LATHIST, "runq"], "Tracing")
    return c, shm


def program_time(make, load):
    """(switch ns/run, wakeup ns/run, all programs' ns per context switch) over load()."""
    with BpfStats():
        with make() as t:
            ids = prog_ids(t.p.pid)
            before = runs(ids)
            c0 = ctxt()
            load()
            c1 = ctxt()
            after = runs(ids)
    return (per_run(before, after, "switch"), per_run(before, after, "wakeup"),
            total_ns(before, after) / max(c1 - c0, 1))


def section_runq():
    bt = runqlat_bt()
    conds, shm = runq_conditions(bt)
    got = {n: {"e2e": [], "ratio": [], "sw": [], "wk": [], "per": []} for n in conds}
    ref = "bpftrace runqlat.bt"
    try:
        for rnd in range(ROUNDS):
            order = list(conds) if rnd % 2 == 0 else list(reversed(conds))
            added = {}
            for n in order:
                t0, n0 = pipe_bench()
                with conds[n]():
                    t1, _ = pipe_bench()
                added[n] = (t1 - t0) * 1e9 / n0
                sw, wk, per = program_time(conds[n], pipe_bench)
                for k, v in (("e2e", added[n]), ("sw", sw), ("wk", wk), ("per", per)):
                    got[n][k].append(v)
            for n in conds:
                got[n]["ratio"].append(added[n] / added[ref] if added[ref] > 0 else float("nan"))
            say(f"runq: round {rnd + 1}/{ROUNDS}")
    finally:
        os.unlink(bt)
        shutil.rmtree(shm, ignore_errors=True)
    print(f"\n### runq: added cost per context switch\n\n`taskset -c 1 perf bench sched pipe "
          f"-l {LOOPS}`, {ROUNDS} rounds interleaved; median (min–max). End to end: ns added per "
          "context switch against a bench without any tracer right before it, and its ratio "
          "to runqlat.bt in the same round. Program time: the tracer's own programs with "
          "`kernel.bpf_stats_enabled=1`, whose own cost per run is in every figure (the empty programs show it).\n")
    print("| condition | added ns/switch | vs runqlat.bt | switch program ns/run | "
          "wakeup program ns/run | all programs ns/switch |")
    print("|---|---|---|---|---|---|")
    for n, g in got.items():
        print(f"| {n} | {cell(g['e2e'])} | {cell(g['ratio'], '{:.2f}x')} | {cell(g['sw'])} | "
              f"{cell(g['wk'])} | {cell(g['per'])} |")
    floor = "3 empty tp_btf programs (floor)"

    def ratios(n, base=None):
        """n's program time per switch over runqlat.bt's, per round (above base's)."""
        b = got[base]["per"] if base else [0] * len(got[n]["per"])
        return [(x - f) / (r - f) if r - f > 0 else float("nan")
                for x, r, f in zip(got[n]["per"], got[ref]["per"], b)]

    print(f"\nProgram time per switch against runqlat.bt's, per round: lathist runq "
          f"{cell(ratios('lathist runq'), '{:.2f}x')}, the clock floor "
          f"{cell(ratios(CLOCK_FLOOR), '{:.2f}x')}; above the empty floor (the stats' own "
          f"cost per run taken out of each): lathist runq "
          f"{cell(ratios('lathist runq', floor), '{:.2f}x')}, the clock floor "
          f"{cell(ratios(CLOCK_FLOOR, floor), '{:.2f}x')}.")


def section_threads():
    if not os.access(RUNQLAT, os.X_OK):
        print(f"\n(per-thread at scale: no libbpf-tools runqlat at {RUNQLAT}; set RUNQLAT)")
        return
    conds = {"lathist runq --per-thread": lambda: Tracer([LATHIST, "runq", "--per-thread"],
                                                          "Tracing"),
             "libbpf-tools runqlat -L": lambda: libbpf_tool(RUNQLAT, "-L")}
    got = {n: {"sw": [], "wk": [], "per": []} for n in conds}
    with Crowd(THREADS):
        for rnd in range(ROUNDS):
            for n in (list(conds) if rnd % 2 == 0 else list(reversed(conds))):
                sw, wk, per = program_time(conds[n], pipe_bench)
                got[n]["sw"].append(sw)
                got[n]["wk"].append(wk)
                got[n]["per"].append(per)
            say(f"threads: round {rnd + 1}/{ROUNDS}")
    ratio = [a / b for a, b in zip(got["lathist runq --per-thread"]["sw"],
                                   got["libbpf-tools runqlat -L"]["sw"])]
    print(f"\n### runq: per-thread keys beside {THREADS:,} live threads\n\n`runqwork crowd "
          f"{THREADS} 100` (each thread woken every 100 ms) and the pipe bench; program time "
          f"as above, {ROUNDS} rounds interleaved.\n")
    print("| condition | switch program ns/run | wakeup program ns/run | all programs ns/switch |")
    print("|---|---|---|---|")
    for n, g in got.items():
        print(f"| {n} | {cell(g['sw'])} | {cell(g['wk'])} | {cell(g['per'])} |")
    print(f"\nlathist's switch program against runqlat -L's, per round: {cell(ratio, '{:.2f}x')}")


def loader_run(cmd, ready, stream, seconds, crowd=None, load=None):
    """(% of one CPU, peak RSS MB) of a tracer over seconds."""
    with Tracer(cmd, ready, stream) as t:
        pid = t.p.pid		# stdbuf execs the tool: the same pid
        time.sleep(1.2)		# past the first interval
        c0, w0 = cpu_ns(pid), time.monotonic()
        if load:
            load(seconds)
        else:
            time.sleep(seconds)
        c1, w1 = cpu_ns(pid), time.monotonic()
        rss = hwm_kb(pid) / 1024
    return 100 * (c1 - c0) / 1e9 / (w1 - w0), rss


def section_loader():
    tmp = tempfile.mkdtemp(prefix="lathist-bench-", dir="/dev/shm")
    out = os.path.join(tmp, "doc.json")
    conds = {
        "lathist runq --per-thread -i 1 (text)": (
            [LATHIST, "runq", "--per-thread", "-i", "1", "-o", os.path.join(tmp, "t.txt")],
            "Tracing", "stderr"),
        "lathist runq --per-thread -i 1 -f json -o": (
            [LATHIST, "runq", "--per-thread", "-i", "1", "-f", "json", "-o", out],
            "Tracing", "stderr"),
    }
    if os.access(RUNQLAT, os.X_OK):
        conds["libbpf-tools runqlat -L 1"] = (["stdbuf", "-oL", RUNQLAT, "-L", "1"], "Tracing",
                                             "stdout")
    rows = []
    for n_threads in (1000, THREADS):
        got = {n: {"cpu": [], "rss": []} for n in conds}
        with Crowd(n_threads):
            for rnd in range(max(ROUNDS // 2, 2)):
                for n in (list(conds) if rnd % 2 == 0 else list(reversed(conds))):
                    cpu, rss = loader_run(*conds[n], SECONDS)
                    got[n]["cpu"].append(cpu)
                    got[n]["rss"].append(rss)
        for n, g in got.items():
            rows.append((n_threads, n, g))
        say(f"loader: {n_threads} threads done")
    tot = {"cpu": [], "rate": []}
    for _ in range(max(ROUNDS // 2, 2)):
        def load(sec):
            c0, w0 = ctxt(), time.monotonic()
            pipe_bench(pinned=False, loops=LOOPS * 2)
            tot["rate"].append((ctxt() - c0) / (time.monotonic() - w0))
        cpu, _ = loader_run([LATHIST, "runq", "-i", "1", "-o", os.path.join(tmp, "t.txt")],
                            "Tracing", "stderr", 0, load=load)
        tot["cpu"].append(cpu)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n### Loader CPU and memory\n\nThe tracer process's CPU (all its threads, "
          f"`/proc/PID/task/*/schedstat`) over {SECONDS:g} s after its first interval, and its "
          f"peak RSS (VmHWM), beside `runqwork crowd N 100`; {max(ROUNDS // 2, 2)} rounds "
          "interleaved.\n")
    print("| live threads | condition | % of one CPU | peak RSS MB |")
    print("|---|---|---|---|")
    for n_threads, n, g in rows:
        print(f"| {n_threads:,} | {n} | {cell(g['cpu'], '{:.2f}')} | {cell(g['rss'], '{:.1f}')} |")
    print(f"| — | lathist runq -i 1 (total) under the unpinned pipe bench "
          f"({statistics.median(tot['rate']) / 1000:.0f}k switches/s) | "
          f"{cell(tot['cpu'], '{:.3f}')} | |")


def section_records():
    tmp = tempfile.mkdtemp(prefix="lathist-bench-", dir="/dev/shm")
    conds = {"JSON (--events FILE)": ["--events", os.path.join(tmp, "e.jsonl")],
             "text (standard output, to a file)": []}
    got = {n: {"ns": [], "rate": []} for n in conds}
    for rnd in range(ROUNDS):
        for n in (list(conds) if rnd % 2 == 0 else list(reversed(conds))):
            doc = os.path.join(tmp, "doc.json")
            text_out = os.path.join(tmp, "records.txt")
            cmd = [LATHIST, "runq", "-f", "json", "-o", doc, "--slower-than", "0", *conds[n]]
            with open(text_out, "w") as sink:
                p = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.PIPE, text=True)
                while True:
                    line = p.stderr.readline()
                    if not line:
                        raise RuntimeError(f"{cmd} ended before tracing: {p.stderr.read()}")
                    if "Tracing" in line:
                        break
                drain = threading.Thread(target=p.stderr.read, daemon=True)
                drain.start()
                c0, w0 = cpu_ns(p.pid), time.monotonic()
                pipe_bench(loops=LOOPS // 2)
                c1, w1 = cpu_ns(p.pid), time.monotonic()
                p.send_signal(2)
                p.communicate(timeout=60)
            rec = json.load(open(doc)).get("records", {})
            delivered = rec.get("delivered", 0)
            got[n]["ns"].append((c1 - c0) / delivered if delivered else float("nan"))
            got[n]["rate"].append(delivered / (w1 - w0))
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n### Records (`--slower-than 0`)\n\nA record per wait over `taskset -c 1 perf "
          f"bench sched pipe -l {LOOPS // 2}`; the loader's CPU per record delivered, "
          f"{ROUNDS} rounds interleaved.\n")
    print("| records as | loader ns/record | records/s |")
    print("|---|---|---|")
    for n, g in got.items():
        print(f"| {n} | {cell(g['ns'])} | {cell(g['rate'], '{:.0f}')} |")


def fast_device():
    """(device, cleanup, what): null_blk where it loads, else a loop device on /dev/shm."""
    if shutil.which("modprobe") and subprocess.run(
            ["modprobe", "null_blk", "nr_devices=1", "queue_mode=2"],
            capture_output=True).returncode == 0 and os.path.exists("/dev/nullb0"):
        return "/dev/nullb0", lambda: subprocess.run(["modprobe", "-r", "null_blk"]), "null_blk"
    dev, cleanup = loop_device("/dev/shm", direct_io=True)
    return dev, cleanup, "a loop device on /dev/shm (null_blk does not load here)"


def fio(dev, seconds):
    r = benchlib.fio(dev, seconds)
    return r["iops"], r["total_ios"]


def section_bio():
    dev, cleanup, what = fast_device()
    conds = {
        "3 empty tp_btf programs (floor)": lambda: Tracer([EMPTY, "block"], "attached"),
        "lathist bio": lambda: Tracer([LATHIST, "bio"], "Tracing"),
        "lathist bio --per-process": lambda: Tracer([LATHIST, "bio", "--per-process"], "Tracing"),
        "bpftrace biolatency (block tracepoints)": lambda: Tracer(
            ["bpftrace", os.path.join(HERE, "biolatency_tp.bt")], "Attaching", "stdout", 1.0),
    }
    if os.access(BIOLATENCY, os.X_OK):
        conds["libbpf-tools biolatency"] = lambda: libbpf_tool(BIOLATENCY)
    got = {n: {"loss": [], "per_io": []} for n in conds}
    try:
        fio(dev, 1)
        for rnd in range(ROUNDS):
            for n in (list(conds) if rnd % 2 == 0 else list(reversed(conds))):
                base, _ = fio(dev, SECONDS)
                with conds[n]():
                    traced, _ = fio(dev, SECONDS)
                got[n]["loss"].append(100 * (1 - traced / base))
                with BpfStats():
                    with conds[n]() as t:
                        ids = prog_ids(t.p.pid)
                        before = runs(ids)
                        _, ios = fio(dev, SECONDS / 2)
                        after = runs(ids)
                got[n]["per_io"].append(total_ns(before, after) / max(ios, 1))
            say(f"bio: round {rnd + 1}/{ROUNDS}")
    finally:
        cleanup()
    print(f"\n### bio: cost per I/O\n\nfio 4 KiB O_DIRECT random reads (psync, depth 1) on "
          f"{what}, {SECONDS:g} s per run, each paired with a run without a tracer right before "
          f"it; {ROUNDS} rounds interleaved. Program time per I/O: all the tracer's programs, "
          "`kernel.bpf_stats_enabled=1`.\n")
    print("| condition | IOPS loss % | all programs ns per I/O |")
    print("|---|---|---|")
    for n, g in got.items():
        print(f"| {n} | {cell(g['loss'], '{:.1f}')} | {cell(g['per_io'])} |")


def timed(cmd):
    """(wall s, peak RSS MB) of a command run to its end, from GNU time (its rusage: the
    child of a small process, not of this one, whose pages a fork would count)."""
    p = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{cmd}: {p.stderr}")
    wall, kb = p.stderr.strip().splitlines()[-1].split()
    return float(wall), int(kb) / 1024


def section_report():
    tmp = tempfile.mkdtemp(prefix="lathist-bench-", dir="/var/tmp")
    one = os.path.join(tmp, "one.jsonl")
    subprocess.run([LATHIST, "runq", "-i", "0.2", "-d", "0.25", "-f", "json", "--series", one,
                    "-o", os.path.join(tmp, "last.json")], check=True, capture_output=True)
    line = json.loads(open(one).readline())
    base = line["meta"]["start_realtime_ns"]
    inputs = {}
    for n in (1000, 10000, 86400):
        path = os.path.join(tmp, f"s{n}.jsonl")
        with open(path, "w") as f:
            for i in range(n):
                m = line["meta"]
                m["interval_index"], m["duration_ns"] = i + 1, 1_000_000_000
                m["start_realtime_ns"] = base + i * 1_000_000_000
                f.write(json.dumps(line, separators=(",", ":")) + "\n")
        inputs[f"a series of {n:,} intervals ({os.path.getsize(path) / 1e6:.0f} MB)"] = [path]
    # 10 files of 10k keys each (--per-thread documents, keys distinct across files)
    subprocess.run([LATHIST, "runq", "--per-thread", "-d", "0.3", "-f", "json", "-o",
                    os.path.join(tmp, "pt.json")], check=True, capture_output=True)
    d = json.load(open(os.path.join(tmp, "pt.json")))
    h0 = d["histograms"][0]
    # the ends the run lost (unpaired, ...) stay: events = paired + those, as report checks
    other_ends = d["loss"]["events"] - d["loss"]["paired"]
    files = []
    for f in range(10):
        hs = []
        for i in range(10000):
            h = json.loads(json.dumps(h0))
            h["key"]["tid"] = h["key"]["pid"] = 100000 + f * 20000 + i
            hs.append(h)
        d["histograms"] = hs
        d["meta"]["run_id"] = f"{f:032x}"
        d["meta"]["start_realtime_ns"] = base + f * 10 ** 10
        d["loss"]["paired"] = sum(h["count"] for h in hs)
        d["loss"]["events"] = d["loss"]["paired"] + other_ends
        path = os.path.join(tmp, f"k{f}.json")
        json.dump(d, open(path, "w"))
        files.append(path)
    inputs["10 files of 10,000 keys each (100,000 histograms)"] = files
    got = {n: {"s": [], "rss": []} for n in inputs}
    for rnd in range(max(ROUNDS // 2, 2)):
        for n, paths in inputs.items():
            s, rss = timed([LATHIST, "report", "-f", "json", "-o", os.path.join(tmp, "out.json"),
                            *paths])
            got[n]["s"].append(s)
            got[n]["rss"].append(rss)
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n### report\n\n`lathist report -f json -o FILE` to its end; "
          f"{max(ROUNDS // 2, 2)} runs each.\n")
    print("| input | seconds | peak RSS MB |")
    print("|---|---|---|")
    for n, g in got.items():
        print(f"| {n} | {cell(g['s'], '{:.2f}')} | {cell(g['rss'], '{:.0f}')} |")


def section_startup():
    bt = runqlat_bt()
    conds = {"lathist runq": lambda: Tracer([LATHIST, "runq"], "Tracing"),
             "bpftrace runqlat.bt": lambda: Tracer(["bpftrace", bt], "Attaching", "stdout")}
    if os.access(RUNQLAT, os.X_OK):
        conds["libbpf-tools runqlat"] = lambda: libbpf_tool(RUNQLAT)
    got = {n: [] for n in conds}
    for rnd in range(ROUNDS):
        for n in (list(conds) if rnd % 2 == 0 else list(reversed(conds))):
            t0 = time.monotonic()
            with conds[n]():
                got[n].append(1000 * (time.monotonic() - t0))
    os.unlink(bt)
    print(f"\n### Start-up\n\nexec to the tool's \"Tracing\"/\"Attaching\" line, {ROUNDS} "
          "rounds.\n")
    print("| tool | ms |")
    print("|---|---|")
    for n, g in got.items():
        print(f"| {n} | {cell(g)} |")


def fork_loop():
    subprocess.run(["bash", "-c", f"for i in $(seq {FORKS}); do /bin/true; done"], check=True)


def section_fork():
    bt = runqlat_bt()
    conds, shm = runq_conditions(bt)
    conds = {n: conds[n] for n in ("3 empty tp_btf programs (floor)", "lathist runq", BASE_NAME,
                                   "bpftrace runqlat.bt", "libbpf-tools runqlat") if n in conds}
    conds["lathist runq --attach raw_tp"] = lambda: Tracer(
        [LATHIST, "runq", "--attach", "raw_tp"], "Tracing")
    got = {n: {"task": [], "new": []} for n in conds}
    try:
        for rnd in range(ROUNDS):
            for n in (list(conds) if rnd % 2 == 0 else list(reversed(conds))):
                with BpfStats():
                    with conds[n]() as t:
                        ids = prog_ids(t.p.pid)
                        before = runs(ids)
                        fork_loop()
                        after = runs(ids)
                got[n]["task"].append(total_ns(before, after) / FORKS)
                # program names are cut at 15 bytes: bpftrace's is sched_wakeup_ne
                got[n]["new"].append(per_run(before, after, "wakeup_ne", skip="\0"))
            say(f"fork: round {rnd + 1}/{ROUNDS}")
    finally:
        os.unlink(bt)
        shutil.rmtree(shm, ignore_errors=True)
    print(f"\n### runq: fork-heavy\n\n`for i in $(seq {FORKS}); do /bin/true; done` in bash; "
          f"program time (as above, {ROUNDS} rounds interleaved) of all the tracer's programs "
          "per process started, and of its sched_wakeup_new program per run.\n")
    print("| condition | all programs ns per process started | sched_wakeup_new ns/run |")
    print("|---|---|---|")
    for n, g in got.items():
        print(f"| {n} | {cell(g['task'])} | {cell(g['new'])} |")


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    virt = subprocess.run(["systemd-detect-virt", "--vm"], capture_output=True,
                          text=True).stdout.strip() or "none"
    return f"{os.cpu_count()} CPUs ({model}), virtualization {virt}, Linux {os.uname().release}"


def only_sections():
    """ONLY's section numbers (all when unset); exits with one line on a bad value."""
    only = os.environ.get("ONLY", "")
    try:
        got = {int(x) for x in only.split(",") if x}
    except ValueError:
        got = {0}
    if not got <= set(SECTIONS):
        sys.exit(f"make bench: ONLY={only!r}: give section numbers {SECTIONS[0]} to "
                 f"{SECTIONS[-1]}, comma-separated, e.g. ONLY=1,8")
    return got


def main():
    global ONLY
    if os.geteuid() != 0:
        sys.exit("make bench needs root")
    ONLY = only_sections()
    if "RUNQLAT" in os.environ and not os.access(RUNQLAT, os.X_OK):
        sys.exit(f"make bench: RUNQLAT={RUNQLAT}: not an executable; give a libbpf-tools "
                 "runqlat build, or leave RUNQLAT out")
    mount_tracefs()
    print(f"## lathist bench, {time.strftime('%Y-%m-%d')}, {machine()}")
    for n, f in ((1, section_runq), (2, section_threads), (3, section_loader),
                 (4, section_records), (5, section_bio), (6, section_report),
                 (7, section_startup), (8, section_fork)):
        if wanted(n):
            f()
            sys.stdout.flush()


if __name__ == "__main__":
    main()
