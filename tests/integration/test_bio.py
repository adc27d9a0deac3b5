"""lathist bio against the kernel's own accounting (/sys/block/DEV/stat) and a workload
that issues a known number of O_DIRECT requests of known sizes, on loop devices, with
each scheduler the kernel offers, on every attach path."""
import json
import mmap
import os
import subprocess
import time

from lh import (BIOWORK, Lathist, LoopDevice, Workload, check, run)

READS, RSIZE, WRITES, WSIZE = 300, 4096, 200, 8192
ATTACH = ("tp_btf", "raw_tp")


def sums(doc, name="total", **match):
    """count and bytes of histograms `name` whose key has every field in match."""
    count = nbytes = 0
    for h in doc["histograms"]:
        if h["name"] == name and all(h["key"].get(k) == v for k, v in match.items()):
            count += h["count"]
            nbytes += h["bytes"]
    return count, nbytes


def run_direct(devs, *tool_args_list):
    """One biowork per device at once; one lathist per argument list, all attached
    before the workloads start; returns (rows per device, stat deltas, docs)."""
    works = [Workload("direct", d.dev, READS, RSIZE, WRITES, WSIZE, exe=BIOWORK) for d in devs]
    pids = [w.start() for w in works]
    tools = [Lathist("bio", "-f", "json", *a).start() for a in tool_args_list]
    before = [d.stat() for d in devs]
    for w in works:
        w.go()
    rows = [w.wait()[0] for w in works]
    time.sleep(0.2)
    after = [d.stat() for d in devs]
    docs = []
    for t in tools:
        rc, out, err = t.stop()
        check(rc == 0, f"lathist bio rc {rc}: {err}")
        docs.append(json.loads(out))
    deltas = [(a[0] - b[0], a[1] - b[1]) for a, b in zip(after, before)]
    for r, p in zip(rows, pids):
        check(r["pid"] == p and r["reads"] == READS and r["writes"] == WRITES, f"workload {r}")
    return rows, deltas, docs


def closes(got, want, lost):
    """A count against the truth: never more, fewer only by the losses the run reported."""
    return got <= want <= got + lost


def check_direct(dev, row, delta, doc):
    pid = row["pid"]
    lost = doc["loss"]["lost"]
    # per process: every request once, bytes taken at issue (C6: never 0); a request whose
    # completion had no event (a kernel gap) is missing only as a reported loss
    c, b = sums(doc, "total", pid=pid, disk=dev.name)
    others = {h["key"].get("pid"): h["count"] for h in doc["histograms"]
              if h["name"] == "total" and h["key"].get("disk") == dev.name and
              h["key"].get("pid") != pid}
    check(closes(c, READS + WRITES, lost),
          f"{dev.name}: pid {pid} total count {c}, want {READS + WRITES}, lost {lost}; "
          f"other pids on the disk {others}; attach {doc['meta']['attach']}; "
          f"loss {doc['loss']}")
    check(b == READS * RSIZE + WRITES * WSIZE or (lost and b < READS * RSIZE + WRITES * WSIZE),
          f"{dev.name}: pid {pid} bytes {b}, want {READS * RSIZE + WRITES * WSIZE}")
    for op, n, size in (("read", READS, RSIZE), ("write", WRITES, WSIZE)):
        c, b = sums(doc, "total", pid=pid, disk=dev.name, op=op)
        check(closes(c, n, lost) and b == c * size,
              f"{dev.name}: pid {pid} {op}: {c} requests {b} bytes, lost {lost}")
        d, _ = sums(doc, "device", pid=pid, disk=dev.name, op=op)
        q, _ = sums(doc, "queue", pid=pid, disk=dev.name, op=op)
        check(d == c and q == c, f"{dev.name} {op}: device {d} queue {q}, want {c} each")
    # per disk: the kernel's own completed-request counts
    for op, i in (("read", 0), ("write", 1)):
        c, _ = sums(doc, "total", disk=dev.name, op=op)
        check(closes(c, delta[i], lost),
              f"{dev.name}: {op} requests {c} vs /sys/block stat delta {delta[i]}, lost {lost}")
    for h in doc["histograms"]:
        if h["key"].get("disk") == dev.name and h["count"]:
            check(h["max_ns"] < 10e9, f"absurd latency {h['max_ns']} in {h['key']}")
            if h["name"] != "queue":	# queue time without a scheduler can be < 1 us
                check(h["sum_ns"] >= h["count"] * 1000,
                      f"sub-microsecond {h['name']} mean in {h['key']}")


def test_direct_io_every_scheduler():
    """N O_DIRECT reads and writes: per-process count N, bytes N x size, per-disk counts
    equal /sys/block/DEV/stat; tp_btf and raw_tp, traced at once, agree (C6,
    C12); for each scheduler."""
    with LoopDevice() as probe:
        scheds = [s for s in probe.schedulers() if s in ("none", "mq-deadline", "kyber", "bfq")]
    check("none" in scheds and "mq-deadline" in scheds, f"schedulers {scheds}")
    for sched in scheds:
        with LoopDevice(scheduler=sched) as dev:
            group = ["--per-process", "--per-disk", "--per-op"]
            rows, deltas, docs = run_direct([dev], *[group + ["--attach", a] for a in ATTACH])
            for doc, attach in zip(docs, ATTACH):
                check(doc["meta"]["attach"]["block_rq_issue"] == attach, "attach type")
                try:
                    check_direct(dev, rows[0], deltas[0], doc)
                except AssertionError as e:
                    raise AssertionError(f"scheduler {sched}, {attach}: {e}") from None
                # nothing lost but what a kernel gap took (the counts above close with it)
                loss = doc["loss"]
                gap = loss["missed_completion"] + loss["prog_missed"]
                check(loss["lost"] == gap, f"{sched} {attach}: losses {loss}")


def test_two_loop_devices_same_sectors():
    """C5: the same sector numbers on two devices at once never collide, on either path."""
    with LoopDevice() as a, LoopDevice() as b:
        group = ["--per-process", "--per-disk", "--per-op"]
        rows, deltas, docs = run_direct([a, b], *[group + ["--attach", t] for t in ATTACH])
        for doc in docs:
            for dev, row, delta in zip((a, b), rows, deltas):
                check_direct(dev, row, delta, doc)
            check(doc["loss"]["overwritten_start"] == 0, f"losses {doc['loss']}")


def test_disk_and_pid_filters():
    """--disk keeps one device; -p keeps one submitter; totals without grouping."""
    with LoopDevice() as a, LoopDevice() as b:
        works = [Workload("direct", d.dev, READS, RSIZE, WRITES, WSIZE, exe=BIOWORK)
                 for d in (a, b)]
        pids = [w.start() for w in works]
        by_disk = Lathist("bio", "-f", "json", "--disk", a.name, "--per-process").start()
        by_pid = Lathist("bio", "-f", "json", "-p", str(pids[1])).start()
        for w in works:
            w.go()
        for w in works:
            w.wait()
        docs = [json.loads(t.stop()[1]) for t in (by_disk, by_pid)]
    procs = {h["key"]["pid"] for h in docs[0]["histograms"]}
    check(pids[0] in procs and pids[1] not in procs, f"--disk {a.name}: processes {procs}")
    c, b = sums(docs[0], "total", pid=pids[0])
    check(closes(c, READS + WRITES, docs[0]["loss"]["lost"]),
          f"--disk: {c} requests, {docs[0]['loss']}")
    c, b = sums(docs[1], "total")
    check(closes(c, READS + WRITES, docs[1]["loss"]["lost"]) and
          (c < READS + WRITES or b == READS * RSIZE + WRITES * WSIZE),
          f"-p: {c} requests, {b} bytes, {docs[1]['loss']}")
    check(all(h["key"] == {} for h in docs[1]["histograms"]), "total grouping has keys")
    check(docs[1]["meta"]["filters"]["pid"] == pids[1], "filters in meta")
    check(docs[1]["loss"]["filtered"] >= READS + WRITES, f"filtered {docs[1]['loss']}")


def test_per_cgroup():
    """--per-cgroup: a request goes to the cgroup of the process that created it (keyed by
    the cgroup's id, its path a label): per cgroup and disk, the workload's cgroup holds its
    O_DIRECT requests and bytes, as many as /sys/block/DEV/stat counted, but for the losses
    the run reports."""
    from test_runq import cgroup2_mount, rmdir_retry
    base = cgroup2_mount()
    path = os.path.join(base, f"lathist-bio-{os.getpid()}")
    os.mkdir(path)
    try:
        ino = os.stat(path).st_ino
        with LoopDevice() as dev:
            work = Workload("direct", dev.dev, READS, RSIZE, WRITES, WSIZE, exe=BIOWORK)
            pid = work.start()
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(pid))
            tool = Lathist("bio", "-f", "json", "--per-cgroup", "--per-disk").start()
            before = dev.stat()
            work.go()
            work.wait()
            time.sleep(0.2)
            after = dev.stat()
            rc, out, err = tool.stop()
    finally:
        rmdir_retry(path)
    check(rc == 0, err)
    doc = json.loads(out)
    check(doc["meta"]["grouping"] == "disk,cgroup", f"grouping {doc['meta']['grouping']}")
    rel = os.path.relpath(path, base)
    mine = [h for h in doc["histograms"] if h["name"] == "total" and
            h["key"].get("disk") == dev.name and h["key"].get("cgroup") == rel]
    check(len(mine) == 1 and mine[0]["key"]["cgroup_id"] == ino,
          f"keys on {dev.name}: {[h['key'] for h in doc['histograms'] if h['name'] == 'total']}")
    lost = doc["loss"]["lost"]
    ios = (after[0] - before[0]) + (after[1] - before[1])
    check(closes(mine[0]["count"], READS + WRITES, lost) and ios >= READS + WRITES,
          f"{rel} on {dev.name}: {mine[0]['count']} requests, /sys/block {ios}, lost {lost}")
    check(mine[0]["count"] < READS + WRITES or
          mine[0]["bytes"] == READS * RSIZE + WRITES * WSIZE, f"bytes {mine[0]['bytes']}")


def test_partitions_and_bio_based_devices_refused():
    """--disk on a partition: its requests reach the tracepoints remapped onto the whole
    disk, so it is refused naming that disk (before: 0 events, "no loss", exit 0); the whole
    disk sees the partition's I/O. A bio-based device (zram: no blk-mq queue) is refused
    too: its I/O never becomes a request."""
    with LoopDevice() as dev:
        subprocess.run(["sfdisk", "-q", dev.dev], input="2048,8192\n", text=True, check=True,
                       capture_output=True)
        subprocess.run(["partx", "-a", dev.dev], capture_output=True)
        part = f"{dev.name}p1"
        for _ in range(50):
            if os.path.exists(f"/sys/class/block/{part}"):
                break
            time.sleep(0.1)
        rc, out, err = run("bio", "-d", "0.2", "--disk", part)
        check(rc == 2 and f"is a partition of {dev.name}" in err and
              f"--disk {dev.name}" in err and len(err.strip().splitlines()) == 1,
              f"rc {rc}, {err!r}")
        work = Workload("direct", f"/dev/{part}", 0, 4096, 20, 4096, exe=BIOWORK)
        work.start()
        tool = Lathist("bio", "-f", "json", "--disk", dev.name).start()
        work.go()
        work.wait()
        rc, out, err = tool.stop()
        c, _ = sums(json.loads(out), "total")
        # the partition goes with the device: a later losetup -f must not find it
        subprocess.run(["partx", "-d", dev.dev], capture_output=True)
        check(rc == 0 and closes(c, 20, json.loads(out)["loss"]["lost"]),
              f"--disk {dev.name}: {c} of 20 writes to {part}")
        check(not os.path.exists(f"/sys/class/block/{part}"), f"{part} left behind")
    bio_based = [d for d in os.listdir("/sys/block")
                 if not os.path.exists(f"/sys/block/{d}/mq")]
    check(bio_based, "no bio-based device here (zram0 expected)")
    rc, out, err = run("bio", "-d", "0.2", "--disk", bio_based[0])
    check(rc == 2 and "bio-based device" in err and len(err.strip().splitlines()) == 1,
          f"{bio_based[0]}: rc {rc}, {err!r}")


def test_disk_without_medium_is_said():
    """--disk on a loop device with no file attached (size 0): it does no I/O until it
    gets one, which lathist says in one line on stderr, and then runs (exit 0)."""
    free = subprocess.run(["losetup", "-f"], capture_output=True, text=True, check=True)
    name = os.path.basename(free.stdout.strip())
    for _ in range(50):
        if os.path.exists(f"/sys/class/block/{name}/size"):
            break
        time.sleep(0.1)
    with open(f"/sys/class/block/{name}/size") as f:
        check(f.read().strip() == "0", f"{name} has a medium: nothing to test")
    rc, out, err = run("bio", "-d", "0.2", "--disk", name)
    notes = [l for l in err.splitlines() if "no medium" in l]
    check(rc == 0 and len(notes) == 1 and f"--disk {name}" in notes[0], f"rc {rc}: {err!r}")


def test_io_no_tracepoint_shows_is_said():
    """I/O to a bio-based device with nothing beneath it (a zram device of its own) never
    becomes a request: the run says which device did how many I/Os, in the text and in
    meta.unchecked, instead of a bare "no loss" (before: nothing said)."""
    tool = Lathist("bio", "-f", "json").start()
    with open("/sys/class/zram-control/hot_add") as f:	# made during the run
        n = int(f.read())
    dev = f"zram{n}"
    try:
        with open(f"/sys/block/{dev}/disksize", "w") as f:
            f.write("16M")
        fd = os.open(f"/dev/{dev}", os.O_WRONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        for i in range(50):
            os.pwritev(fd, [buf], i * 4096)
        os.close(fd)
        rc, out, err = tool.stop()
        unchecked = json.loads(out)["meta"]["unchecked"] or ""
        check(rc == 0 and f"{dev} 50 I/Os" in unchecked and "bio-based" in unchecked,
              f"meta.unchecked {unchecked!r}")
        rc, out, err = run("bio", "-d", "0.3")
        check(rc == 0 and f"{dev}" not in out, "a device that did no I/O was named")
    finally:
        with open(f"/sys/block/{dev}/reset", "w") as f:
            f.write("1")
        with open("/sys/class/zram-control/hot_remove", "w") as f:
            f.write(str(n))


def test_buffered_writes_go_to_the_flusher():
    """C11: buffered writes flushed by sync are attributed to whoever flushed them
    (the sync process or a writeback worker), never to the writer; direct writes are
    the writer's (test_direct_io_every_scheduler)."""
    size, count = 65536, 64
    with LoopDevice() as dev:
        # the last close of a block device writes its dirty pages back in the closing
        # task; holding it open here keeps the writer's close from being the last
        holder = os.open(dev.dev, os.O_RDONLY)
        work = Workload("buffered", dev.dev, size, count, exe=BIOWORK)
        pid = work.start()
        tool = Lathist("bio", "-f", "json", "--disk", dev.name, "--per-process",
                       "--per-op").start()
        work.go()
        work.wait()
        subprocess.run(["sync"], check=True)
        time.sleep(0.2)
        rc, out, err = tool.stop()
        os.close(holder)
    check(rc == 0, err)
    doc = json.loads(out)
    c, _ = sums(doc, "total", pid=pid, op="write")
    check(c == 0, f"the writer {pid} was charged {c} write requests it did not submit")
    writers = {}
    for h in doc["histograms"]:
        if h["name"] == "total" and h["key"]["op"] == "write":
            writers[(h["key"]["pid"], h["key"]["comm"])] = h["bytes"]
    check(sum(writers.values()) >= size * count,
          f"flushed bytes {sum(writers.values())} < written {size * count}: {writers}")
    check(all(comm == "sync" or comm.startswith("kworker") for _, comm in writers),
          f"flushers: {writers}")


def test_interval_and_text():
    """-i: intervals add up; text has the three tables, bytes and the loss footer."""
    with LoopDevice() as dev:
        work = Workload("direct", dev.dev, READS, RSIZE, WRITES, WSIZE, exe=BIOWORK)
        pid = work.start()
        tool = Lathist("bio", "-f", "json", "-i", "0.1", "-p", str(pid)).start()
        work.go()
        work.wait()
        time.sleep(0.2)
        rc, out, err = tool.stop()
        docs = [json.loads(line) for line in out.splitlines() if line.strip()]
        check(len(docs) >= 2, f"{len(docs)} intervals")
        c = sum(sums(d, "total")[0] for d in docs)
        # a request whose completion had no event (a kernel gap: an interrupt while a
        # thread of PID 1 runs) is missing only as a reported loss, as in check_direct
        lost = sum(d["loss"]["lost"] for d in docs)
        check(closes(c, READS + WRITES, lost),
              f"intervals add to {c}, want {READS + WRITES}, lost {lost}: "
              f"{[{k: v for k, v in d['loss'].items() if v} for d in docs if d['loss']['lost']]}")
        rc, out, err = run("bio", "-d", "0.5", "--per-disk", "--disk", dev.name, "-v")
        check(rc == 0, err)
        for needle in ("lathist bio: host ", "attach block_io_start=tp_btf", "events and losses",
                       "no_queue_stage", "completed_unissued"):
            check(needle in out, f"{needle!r} missing:\n{out}")
        for needle in ("runq", "switch-in", "--max-tasks", "sched_switch"):	# bio speaks of itself
            check(needle not in out, f"{needle!r} in bio's -v text:\n{out}")


BAD = [
    (["--disk", "nosuchdisk0"], "no such block device"),
    (["--disk", "../vda"], "no such block device"),
    (["--max-requests", "0"], "--max-requests"),
    (["--per-thread"], "unknown option '--per-thread'"),
    (["-p", "999999999"], "no such process"),
    (["--precision", "9"], "0 to 4"),
    (["--precision", "5"], "0 to 4"),
    (["--disk", "vda", "--disk", "vda"], "given twice"),
    (["--max-requests", "10", "--max-requests", "20"], "--max-requests given twice"),
    (["extra"], "unexpected argument"),
]


def test_bad_input():
    for args, needle in BAD:
        rc, out, err = run("bio", *args)
        check(rc == 2 and needle in err and len(err.strip().splitlines()) == 1 and not out,
              f"{args}: rc {rc} stderr {err!r}")


def test_partial_completion_and_pointer_reuse():
    """C10, on the real bio programs run with BPF_PROG_TEST_RUN against a fake struct
    request in kernel memory (loop devices never complete a request in chunks): a
    request completed in two chunks counts once with all its bytes; a pointer reused
    right after completion, or after a merge, never pairs with the old start; one whose
    completion came with no event is a missed_completion."""
    import os
    exe = os.path.join(os.path.dirname(BIOWORK), "bio_synth")
    p = subprocess.run([exe], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"bio_synth: {p.stderr}")
    steps = {s["step"]: s for s in map(json.loads, p.stdout.splitlines())}
    s = steps["first_chunk"]
    check(s["partial"] == 1 and s["events"] == 0 and s["total_count"] == 0, f"first chunk {s}")
    s = steps["second_chunk"]
    check(s["events"] == 1 and s["total_count"] == 1 and s["total_bytes"] == 8192, f"done {s}")
    s = steps["reused"]
    check(s["total_count"] == 2 and s["overwritten"] == 0 and s["lost"] == 0, f"reused {s}")
    s = steps["reused_after_merge"]
    check(s["total_count"] == 3 and s["merged"] == 1 and s["lost"] == 0, f"after merge {s}")
    check(s["total_max_ns"] < 50_000_000, f"paired with the old start: max {s['total_max_ns']} ns")
    s = steps["merged_then_unknown_completion"]
    check(s["merged"] == 2 and s["before_trace"] == 1 and s["total_count"] == 3, f"merge {s}")
    # a completion with no event: the struct's next request counts it as missed_completion,
    # a loss, and its own time starts at its own creation (never 50 ms)
    s = steps["completion_not_seen"]
    check(s["missed_completion"] == 1 and s["overwritten"] == 0 and s["lost"] == 1 and
          s["total_count"] == 4, f"missed completion {s}")
    check(s["total_max_ns"] < 50_000_000, f"paired with the old start: max {s['total_max_ns']} ns")
    # before 6.5 a requeued request is inserted again: not a new request, not a loss
    prev, s = s, steps["requeued_insert"]
    delta = {k: s[k] - prev[k] for k in ("created", "requeued", "paired", "lost")}
    check(delta == {"created": 1, "requeued": 1, "paired": 1, "lost": 0}, f"requeue {delta}")
    # the struct back at another sector with its completion unseen: a missed completion
    prev, s = s, steps["insert_after_missed_completion"]
    delta = {k: s[k] - prev[k] for k in ("created", "missed_completion", "paired", "lost")}
    check(delta == {"created": 2, "missed_completion": 1, "paired": 1, "lost": 1},
          f"insert after a missed completion {delta}")
    # the end-of-run sweep: of five issued requests, the one the kernel freed since (its
    # completion had no event) and the one whose struct holds another request in flight
    # are missed completions; the one in flight half done, the requeued one and a flush
    # in flight (no data: no sector range) are not
    prev, s = s, steps["sweep"]
    delta = {k: s[k] - prev[k] for k in ("created", "missed_completion", "paired", "lost")}
    check(delta == {"created": 5, "missed_completion": 2, "paired": 0, "lost": 2},
          f"sweep {delta}")


def disk_tags():
    """Request tags of every blk-mq disk: nr_requests x its hardware queues (sysfs)."""
    total = 0
    for d in os.listdir("/sys/block"):
        try:
            nr = int(open(f"/sys/block/{d}/queue/nr_requests").read())
        except OSError:
            continue
        mq = f"/sys/block/{d}/mq"
        queues = sum(q.isdigit() for q in os.listdir(mq)) if os.path.isdir(mq) else 0
        total += nr * max(queues, 1)
    return total


def test_maps_sized_to_the_machine():
    """Without --max-requests the in-flight map holds the disks' request tags x 1.5 + 1024
    (a request exists from its tag to its completion), computed here from sysfs, with a
    loop device added just before so the count is the one bio read; --per-process's
    histogram map: the processes in /proc (read while bio starts) x 2 + 1024 (both halves
    full while one is read; read early when half full, as runq's keyed maps are)."""
    with LoopDevice():
        tags = disk_tags()
        lo = sum(d.isdigit() for d in os.listdir("/proc"))
        rc, out, err = run("bio", "-d", "0.2", "-f", "json", "--per-process")
        hi = sum(d.isdigit() for d in os.listdir("/proc"))
    check(rc == 0, err)
    maps = {m["name"]: m["max_entries"] for m in json.loads(out)["meta"]["maps"]}
    check(maps["bio_requests"] == tags * 3 // 2 + 1024, f"{maps} for {tags} tags")
    # processes come and go while it starts: between the fewest and the most this saw,
    # the most with the run itself (bio counts its own process)
    want = sorted(k * 2 + 1024 for k in (min(lo, hi), max(lo, hi) + 1))
    check(want[0] <= maps["bio_hist"] <= want[1], f"bio_hist {maps['bio_hist']}, want {want}")


def test_full_maps_are_losses():
    """Maps too small lose requests: counted once each, flagged, and `paired` still
    equals what the histograms hold. Two processes on one device, each its own key; on
    the other, two requests in flight at once in every round (one io_submit of two writes
    apart: both are made before either is issued), against a request map of one."""
    with LoopDevice() as a, LoopDevice() as b:
        works = [Workload("direct", a.dev, READS, RSIZE, WRITES, WSIZE, exe=BIOWORK)
                 for _ in range(2)]
        works.append(Workload("apart", b.dev, 2, READS + WRITES, exe=BIOWORK))
        for w in works:
            w.start()
        keys = Lathist("bio", "-f", "json", "--per-process", "--max-keys", "1", "--disk",
                       a.name).start()
        reqs = Lathist("bio", "-f", "json", "--max-requests", "1", "--disk", b.name).start()
        merges0 = (a.merges(), b.merges())
        for w in works:
            w.go()
        for w in works:
            w.wait()
        time.sleep(0.2)
        merges = (a.merges() - merges0[0], b.merges() - merges0[1])
        docs = [json.loads(t.stop()[1]) for t in (keys, reqs)]
    loss = docs[0]["loss"]
    check(loss["hist_map_full"] > 0, f"--max-keys 1 with two processes: {loss}")
    check(loss["paired"] == sum(h["count"] for h in docs[0]["histograms"] if h["name"] == "total"),
          f"paired {loss['paired']} != histograms' total")
    # two processes write the same sectors at once: now and then the block layer merges a
    # bio into the other's queued request, or one request into another (its bytes travel
    # with it); /sys/block/DEV/stat counts both, and neither completes a request of its own
    check(loss["paired"] + loss["hist_map_full"] + merges[0] == 2 * (READS + WRITES),
          f"keys: {loss}, /sys/block merges {merges[0]}")
    check(docs[0]["bias"]["flag"], "a full histogram map is not flagged")
    loss = docs[1]["loss"]
    check(loss["start_map_full"] > 0, f"--max-requests 1 with two processes: {loss}")
    # the device was idle before: every request whose insert failed at creation ends
    # either unpaired or, recorded at issue when the entry freed up, without queue stage;
    # or it is merged into another request (block_rq_merge of an untracked request counts
    # nothing; /sys/block counts the merge) and completes no request of its own
    check(0 <= loss["start_map_full"] - loss["unpaired_before_trace"] - loss["no_queue_stage"]
          <= merges[1] and
          loss["paired"] + loss["unpaired_before_trace"] + merges[1] ==
          2 * (READS + WRITES) == loss["events"] + merges[1],
          f"requests: {loss}, /sys/block merges {merges[1]}")
    check(docs[1]["bias"]["flag"], "a full request map is not flagged")


def test_front_merges_every_path():
    """Batches of O_DIRECT writes at descending sectors under one plug: the block layer
    merges each bio in front of the request before it, which moves the request's start
    sector. Every path counts each request once, with a queue stage and all its bytes,
    and as many requests as /sys/block/DEV/stat (pairing by the request struct, a moved
    sector changes nothing)."""
    batch, rounds = 32, 20
    for sched in ("none", "mq-deadline"):
        with LoopDevice(scheduler=sched) as dev:
            work = Workload("reverse", dev.dev, batch, rounds, exe=BIOWORK)
            pid = work.start()
            tools = [Lathist("bio", "-f", "json", "-p", str(pid), "--per-process", "--attach",
                             a).start() for a in ATTACH]
            with open(f"/sys/block/{dev.name}/stat") as f:
                before = [int(v) for v in f.read().split()]
            work.go()
            row = work.wait()[0]
            time.sleep(0.2)
            with open(f"/sys/block/{dev.name}/stat") as f:
                after = [int(v) for v in f.read().split()]
            docs = [json.loads(t.stop()[1]) for t in tools]
            writes, merges = after[4] - before[4], after[5] - before[5]
            check(row["writes"] == batch * rounds, f"workload {row}")
            check(merges >= rounds * (batch - 1) // 2 and writes < batch * rounds,
                  f"{sched}: {merges} merges, {writes} requests: nothing to test")
            for doc, attach in zip(docs, ATTACH):
                what = f"{sched} {attach}"
                check(doc["meta"]["attach"]["block_rq_issue"] == attach, f"{what}: attach")
                c, b = sums(doc, "total", pid=pid)
                q, _ = sums(doc, "queue", pid=pid)
                check(c == writes and q == c and b == batch * rounds * 4096,
                      f"{what}: {c} requests ({q} with a queue stage), {b} bytes; want "
                      f"{writes} from /sys/block, {batch * rounds * 4096} bytes")
                # (no_queue_stage counts every disk's requests: flushes elsewhere have none)
                check(doc["loss"]["lost"] == 0, f"{what}: {doc['loss']}")


def test_flushes_every_path():
    """O_DIRECT|O_DSYNC writes: the block layer sends a flush request after each write
    (its start sector is -1: block_rq_issue records 0, block_rq_complete -1). Every path
    counts the same flushes and writes, no loss and nothing "from before tracing"."""
    with LoopDevice() as dev:
        tools = [Lathist("bio", "-f", "json", "--per-op", "--disk", dev.name, "--attach", a).start()
                 for a in ATTACH]
        subprocess.run(["dd", "if=/dev/zero", f"of={dev.dev}", "bs=4k", "count=100",
                        "oflag=direct,dsync"], check=True, capture_output=True)
        time.sleep(0.2)
        docs = [json.loads(t.stop()[1]) for t in tools]
    got = {a: {h["key"]["op"]: h["count"] for h in d["histograms"] if h["name"] == "total"}
           for a, d in zip(ATTACH, docs)}
    check(got["tp_btf"].get("flush", 0) >= 100 and got["tp_btf"].get("write", 0) >= 100,
          f"no flushes to compare: {got}")
    check(got["raw_tp"] == got["tp_btf"], f"per op: {got}")
    for a, d in zip(ATTACH, docs):
        # a flush taken for a requeue would make ~100; the driver's own requeues (loop
        # under load: BLK_STS_RESOURCE) are a few at most; no loss
        check(d["loss"]["lost"] == 0 and d["loss"]["requeued"] < 10, f"{a}: {d['loss']}")
        # each write completes once more, with 0 bytes, when its flush sequence ends:
        # not an end (formerly miscounted as a request from before tracing)
        check(d["loss"]["unpaired_before_trace"] == 0, f"{a}: {d['loss']}")


def test_filtered_request_is_not_a_loss():
    """A request -p (--cgroup) leaves out whose completion came with no event is not a
    loss of the run when its struct comes back (before: missed_completion, so a -p run
    reported losses from other processes' I/O)."""
    import os
    exe = os.path.join(os.path.dirname(BIOWORK), "bio_synth")
    p = subprocess.run([exe, "filtered"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"bio_synth: {p.stderr}")
    s = json.loads(p.stdout.splitlines()[-1])
    check(s["step"] == "filtered_missed_completion" and s["created"] == 2 and
          s["missed_completion"] == 0 and s["lost"] == 0, f"filtered {s}")


def test_queue_argument_kernels_load():
    """Before 5.11 block_rq_insert and block_rq_issue pass (request_queue, request): the
    programs loaded for such a kernel (the shim in core_fixes.bpf.h reads the second
    argument) pass the verifier and pair a request given that way. (The verifier refuses a
    load through a ctx pointer moved by a register: a shim compiled to one load at an
    offset computed from the flag would load here only while the flag is 0.)"""
    exe = os.path.join(os.path.dirname(BIOWORK), "bio_synth")
    p = subprocess.run([exe, "queue-arg"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"bio_synth queue-arg: {p.stderr}")
    s = json.loads(p.stdout.splitlines()[-1])
    check(s["step"] == "queue_argument" and s["created"] == 1 and s["paired"] == 1 and
          s["total_bytes"] == 8192 and s["lost"] == 0, f"queue-arg {s}")
