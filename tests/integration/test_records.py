"""Per-event records (--slower-than) through the BPF ring buffer: every record is either
delivered or counted as dropped, the histograms keep every event either way, and the
records agree with the histograms and with the workload that caused them."""
import json
import os
import re
import subprocess
import tempfile

from lh import (BIOWORK, LATHIST, Lathist, LoopDevice, Workload, by_id, check, per_task,
                paragraph, run)
from test_runq import CPU, LossBudget, check_schedstat


def read_lines(path, growing=False):
    """The JSON lines of path; growing: a file still written, read up to its last newline
    (a write of several pages reaches a reader a page at a time)."""
    with open(path) as f:
        text = f.read()
    if growing:
        text = text[:text.rfind("\n") + 1]
    check(text == "" or text.endswith("\n"), f"{path}: last line is torn")
    return [json.loads(line) for line in text.splitlines()]


def test_flooded_ring_buffer_counts_every_drop():
    """C8: a one-page ring buffer, a consumer slowed down on purpose and a busy workload:
    per interval and in all, delivered + dropped = eligible (counted in BPF); the
    --events file holds exactly the delivered records; the histograms still hold every
    wait (schedstat); the distribution's records are flagged."""
    with tempfile.TemporaryDirectory() as tmp:
        events = os.path.join(tmp, "events.json")
        work = Workload("mix", CPU, 2, 2, 1500)
        pid = work.start()
        tool = Lathist("runq", "-f", "json", "-i", "0.5", "--per-thread", "-p", str(pid),
                       "--slower-than", "0", "--ringbuf-size", "4096",
                       "--events", events, test="consumer-delay-us=2000").start()
        work.go()
        rows = work.wait()
        rc, out, err = tool.stop()
        check(rc == 0, f"rc {rc}: {err}")
        docs = [json.loads(line) for line in out.splitlines() if line.strip()]
        recs = read_lines(events)
    check(len(docs) >= 3, f"only {len(docs)} intervals")
    eligible = delivered = dropped = 0
    for d in docs:
        r = d["records"]
        check(r["ringbuf_bytes"] == 4096 and r["slower_than_ns"] == 0, f"records meta {r}")
        check(r["eligible"] == d["loss"]["records_eligible"] and
              r["dropped"] == d["loss"]["ringbuf_drop"], f"records {r} vs loss {d['loss']}")
        # --slower-than 0: every paired wait is eligible, in the same interval
        check(r["eligible"] == d["loss"]["paired"],
              f"interval {d['meta']['interval_index']}: eligible {r['eligible']} vs paired "
              f"{d['loss']['paired']}")
        check(d["loss"]["paired"] == sum(h["count"] for h in d["histograms"]),
              "paired differs from the histograms' total")
        if r["dropped"]:
            check(d["bias"]["flag"] and d["bias"]["records"] and
                  any(x.startswith("ringbuf_drop:") for x in d["bias"]["reasons"]),
                  f"drops not flagged: {d['bias']}")
        eligible += r["eligible"]
        delivered += r["delivered"]
        dropped += r["dropped"]
    check(dropped > 0, f"no drops with a one-page ring buffer and a slow consumer ({eligible})")
    check(delivered + dropped == eligible,
          f"delivered {delivered} + dropped {dropped} != eligible {eligible}")
    check(len(recs) == delivered, f"{len(recs)} lines in --events, {delivered} delivered")
    tids = {r["tid"] for r in rows}
    for rec in recs:
        check(rec["pid"] == pid and (rec["tid"] == pid or rec["tid"] in tids) and
              0 <= rec["cpu"] < os.cpu_count(), f"record of another task: {rec}")
    # the histograms kept every wait the ring buffer could not carry
    total = {}
    for d in docs:
        for tid, t in by_id(per_task(d)).items():
            total.setdefault(tid, {"count": 0, "sum_ns": 0, "max_ns": 0})
            total[tid]["count"] += t["count"]
            total[tid]["sum_ns"] += t["sum_ns"]
            total[tid]["max_ns"] = max(total[tid]["max_ns"], t["max_ns"])
    lost = {"loss": {"lost": sum(d["loss"]["lost_from_histograms"] for d in docs)}}
    check_schedstat(rows, total, ("spinner", "sleeper"), LossBudget(lost))


def test_flooded_ring_buffer_text_says_so():
    """C8 in text: the footer gives eligible, delivered and dropped, which add up, and
    says the records are not every slow event."""
    with tempfile.TemporaryDirectory() as tmp:
        events = os.path.join(tmp, "events.json")
        work = Workload("mix", CPU, 1, 2, 1000)
        pid = work.start()
        tool = Lathist("runq", "-p", str(pid), "--slower-than", "0", "--ringbuf-size", "1",
                       "--events", events, test="consumer-delay-us=2000").start()
        work.go()
        work.wait()
        rc, out, err = tool.stop()
        check(rc == 0, f"rc {rc}: {err}")
        n = len(read_lines(events))
    m = re.search(r"records \(--slower-than 0\.000 us\): eligible (\d+), delivered (\d+), "
                  r"dropped (\d+) \(([\d.]+)%; ring buffer 4 KiB\)", out)
    check(m, f"no records line in:\n{out}")
    e, d, x = int(m.group(1)), int(m.group(2)), int(m.group(3))
    check(d + x == e and d == n and x > 0, f"eligible {e} delivered {d} dropped {x}, file {n}")
    line = paragraph(out, "lost") or ""
    check(re.search(r"ringbuf_drop %d \([\d.]+%% of records\)" % x, line), out)
    check("the ring buffer was full, so the records are not every slow event" in line, out)


def records_match(attach):
    """Two CPU-bound threads on one CPU wait for each other: the records of waits at or
    over 1024 us are exactly the histogram slots from 1024 us up (count and max per
    thread and kind), on the right CPU, each after the other thread; none dropped."""
    work = Workload("mix", CPU, 2, 0, 1000)
    pid = work.start()
    with tempfile.TemporaryDirectory() as tmp:
        events = os.path.join(tmp, "events.json")
        tool = Lathist("runq", "-f", "json", "-u", "us", "--per-thread", "-p", str(pid),
                       "--slower-than", "1024001ns", "--events", events,
                       "--attach", attach).start()
        work.go()
        rows = work.wait()
        rc, out, err = tool.stop()
        check(rc == 0, f"rc {rc}: {err}")
        doc = json.loads(out)
        recs = read_lines(events)
    r = doc["records"]
    check(r["dropped"] == 0 and r["delivered"] == r["eligible"] == len(recs),
          f"records {r}, {len(recs)} lines")
    check(len(recs) >= 10, f"only {len(recs)} waits over 1024 us: the test needs more")
    tids = {row["tid"] for row in rows}
    want = {}
    for h in doc["histograms"]:
        n = sum(s["count"] for s in h["slots"] if s["lo_ns"] >= 1024000)
        if n:
            want[(h["key"]["tid"], h["name"])] = (n, h["max_ns"])
    got = {}
    elsewhere = 0
    for rec in recs:
        check(rec["latency_ns"] > 1024000, f"record under the threshold: {rec}")
        check(rec["pid"] == pid and (rec["tid"] == pid or rec["tid"] in tids), f"{rec}")
        check(rec["prev_tid"] != rec["tid"], f"ran after itself: {rec}")
        # a thread pins itself to CPU once it runs: only its first waits can be elsewhere
        if rec["tid"] in tids:	# the main thread is not pinned at all
            elsewhere += rec["cpu"] != CPU or rec["start_cpu"] != CPU
        n, mx = got.get((rec["tid"], rec["name"]), (0, 0))
        got[(rec["tid"], rec["name"])] = (n + 1, max(mx, rec["latency_ns"]))
    check(got == want, f"records {got} vs histograms {want}")
    check(elsewhere <= 2 * len(tids), f"{elsewhere} records not on CPU {CPU}")
    check(doc["bias"]["records"] is False, f"bias {doc['bias']}")


def test_records_match_the_histograms_tp_btf():
    records_match("tp_btf")


def test_records_match_the_histograms_raw_tp():
    """The same records on the probe-read path."""
    records_match("raw_tp")


def test_bio_records_no_loss():
    """Every O_DIRECT request of the workload gets a record (--slower-than 0) with its
    disk, op, size and total = queue + device; no loss: bias.flag is false and the text
    says so."""
    with LoopDevice() as dev, tempfile.TemporaryDirectory() as tmp:
        events = os.path.join(tmp, "events.json")
        work = Workload("direct", dev.dev, 40, 4096, 30, 8192, exe=BIOWORK)
        pid = work.start()
        tool = Lathist("bio", "-f", "json", "-p", str(pid), "--slower-than", "0",
                       "--events", events).start()
        work.go()
        work.wait()
        rc, out, err = tool.stop()
        check(rc == 0, f"rc {rc}: {err}")
        doc = json.loads(out)
        recs = read_lines(events)
        check(len(recs) == 70 and doc["records"]["delivered"] == 70 and
              doc["records"]["eligible"] == 70, f"{len(recs)} records: {doc['records']}")
        ops = {"read": 0, "write": 0}
        for rec in recs:
            check(rec["pid"] == pid and rec["disk"] == dev.name, f"{rec}")
            check(rec["bytes"] == (4096 if rec["op"] == "read" else 8192), f"{rec}")
            check(rec["queue_ns"] is not None and rec["device_ns"] is not None and
                  rec["total_ns"] == rec["queue_ns"] + rec["device_ns"], f"{rec}")
            ops[rec["op"]] += 1
        check(ops == {"read": 40, "write": 30}, f"ops {ops}")
        check(doc["bias"]["flag"] is False and doc["loss"]["lost"] == 0, f"{doc['bias']}")
        # the same in text, with records as text lines before the report
        work = Workload("direct", dev.dev, 5, 4096, 5, 4096, exe=BIOWORK)
        pid = work.start()
        tool = Lathist("bio", "-p", str(pid), "--slower-than", "0").start()
        work.go()
        work.wait()
        rc, out, err = tool.stop()
        check(rc == 0, f"rc {rc}: {err}")
        lines = [l for l in out.splitlines() if f"pid {pid} " in l and " total " in l]
        check(len(lines) == 10, f"{len(lines)} record lines:\n{out}")
        check("no loss: every paired event is in the histograms, every eligible event has "
              "a record" in out, out)


def test_same_file_under_two_spellings_is_refused():
    """--events, --series and -o may not name one file, however it is spelled: the same
    path, with ./ and //, through a folder's symbolic link, or through a bind mount of the
    folder (its path differs, its inode does not): -o's rename would replace the records
    or the series. Refused before tracing (exit 2), no file made."""
    with tempfile.TemporaryDirectory() as tmp:
        a, b, link = (os.path.join(tmp, n) for n in ("a", "b", "link"))
        os.mkdir(a)
        os.mkdir(b)
        os.symlink(a, link)
        subprocess.run(["mount", "--bind", a, b], check=True)
        try:
            for other in (f"{a}/w.json", f"{a}//./w.json", f"{link}/w.json", f"{b}/w.json"):
                for args, said in ((["--slower-than", "0", "--events", other],
                                    "--events and -o name the same file"),
                                   (["-i", "0.1", "--series", other],
                                    f"--series and -o name the same file '{other}'")):
                    rc, out, err = run("runq", "-d", "0.3", "-f", "json", "-o", f"{a}/w.json",
                                       *args)
                    check(rc == 2 and said in err and len(err.strip().splitlines()) == 1,
                          f"{args}: rc {rc}, stderr {err!r}")
                    check(not os.listdir(a), f"{args}: made {os.listdir(a)}")
            # two names in the bind-mounted folder are two files
            rc, out, err = run("runq", "-d", "0.2", "-f", "json", "-o", f"{a}/w.json",
                               "--slower-than", "0", "--events", f"{b}/e.json")
            check(rc == 0 and sorted(os.listdir(a)) == ["e.json", "w.json"], f"{rc} {err}")
        finally:
            subprocess.run(["umount", b], check=True)


def test_record_options_bad_input():
    """Clear one-line usage errors, exit 2."""
    with tempfile.TemporaryDirectory() as tmp:
        link = os.path.join(tmp, "link")
        os.symlink(os.path.join(tmp, "target"), link)
        for args, text in ((["--slower-than", "soon"], "--slower-than 'soon'"),
                           (["--ringbuf-size", "0"], "--ringbuf-size '0'"),
                           (["--ringbuf-size", "4g"], "too large"),
                           (["--events", os.path.join(tmp, "e.json")], "--events needs --slower-than"),
                           (["--slower-than", "1ms", "--events", link], "symbolic link"),
                           (["--slower-than", "1ms", "--events", tmp], "Is a directory"),
                           # a stream is opened under its own name: up to NAME_MAX
                           (["--slower-than", "1ms", "--events", os.path.join(tmp, "e" * 256)],
                            "--events: its file name is 256 bytes, over the 255"),
                           (["-i", "0.5", "--series", os.path.join(tmp, "s" * 256)],
                            "--series: its file name is 256 bytes, over the 255")):
            rc, out, err = run("runq", "-d", "1", *args)
            check(rc == 2 and text in err and len(err.strip().splitlines()) <= 2,
                  f"{args}: rc {rc}, stderr {err!r}")
        check(not os.path.exists(os.path.join(tmp, "target")), "wrote through the symlink")


def test_events_disk_full():
    """--events on a full file system: one line saying so, tracing and the report go on,
    exit 1, and the file holds whole lines only."""
    import subprocess
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "small")
        os.mkdir(small)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", small], check=True)
        try:
            events = os.path.join(small, "events.json")
            report = os.path.join(tmp, "report.json")
            work = Workload("mix", CPU, 1, 2, 800)
            work.start()
            tool = Lathist("runq", "-f", "json", "-o", report, "-i", "0.3", "--slower-than",
                           "0", "--events", events).start()
            work.go()
            work.wait()
            rc, out, err = tool.stop()
            lines = read_lines(events)
        finally:
            subprocess.run(["umount", small], check=True)
        check(rc == 1, f"rc {rc}: {err}")
        fails = [l for l in err.splitlines() if "writing the records to" in l]
        check(len(fails) == 1 and "No space left on device" in fails[0] and
              "reading the histograms" not in err, err)
        with open(report) as f:
            doc = json.load(f)
        check(doc["records"]["eligible"] > len(lines) > 0, f"{doc['records']}, {len(lines)} lines")


def test_closed_stdout():
    """Started with stdout closed: one line and exit 1, never a write into another file;
    with every output in a file it runs."""
    import subprocess
    with tempfile.TemporaryDirectory() as tmp:
        events = os.path.join(tmp, "e.json")
        p = subprocess.run(["bash", "-c", f"'{LATHIST}' runq -d 0.3 --slower-than 0 "
                            f"--events '{events}' >&-"], capture_output=True, text=True)
        check(p.returncode == 1 and "standard output is closed" in p.stderr and
              not os.path.exists(events), f"rc {p.returncode}: {p.stderr!r}")
        report = os.path.join(tmp, "r.txt")
        p = subprocess.run(["bash", "-c", f"'{LATHIST}' runq -d 0.3 --slower-than 0 "
                            f"--events '{events}' -o '{report}' >&-"],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"rc {p.returncode}: {p.stderr!r}")
        read_lines(events)	# JSON lines only: no report mixed in
        with open(report) as f:
            check("lathist runq: host " in f.read(), "report file")


def test_records_into_closed_pipe_end_the_run():
    """Records on stdout, text or JSON lines (--events -), whose reader quits: the run ends
    (no -d), saying why, exit 1; before, it traced on until killed."""
    import subprocess
    import threading
    import time
    # records to write, however quiet the machine: a thread that sleeps 0.5 ms at a time
    # (on an idle host the records of a few hundred waits a second took 17 s to fill the
    # stdout buffer twice: head's line, then the write that finds it gone)
    done = threading.Event()

    def sleeper():
        while not done.is_set():
            time.sleep(0.0005)
    t = threading.Thread(target=sleeper, daemon=True)
    t.start()
    with tempfile.TemporaryDirectory() as tmp:
        for extra in ("", f"--events - -o '{tmp}/r.txt'"):
            try:
                p = subprocess.run(["bash", "-c", f"'{LATHIST}' runq --slower-than 0 {extra} "
                                    "| head -1; exit ${PIPESTATUS[0]}"],
                                   capture_output=True, text=True, timeout=30)
            finally:
                if extra:
                    done.set()
            # one line for one closed pipe: the report due on it after the records' is
            # not tried (before, a second line said the report could not be written)
            said = [l for l in p.stderr.splitlines()
                    if not l.startswith(("Tracing", "lathist runq: host"))]
            check(p.returncode == 1 and p.stdout.count("\n") == 1 and len(said) == 1 and
                  "nobody reads them any more: the run ends" in said[0],
                  f"{extra!r}: rc {p.returncode}, stdout {p.stdout!r}, stderr {p.stderr!r}")


def test_stdout_that_cannot_be_written():
    """Whatever goes to stdout must get there: help, --version and doctor into a full
    device or a closed stdout are exit 1 with one line (they were exit 0, the text lost);
    reports with -i into a full device say so once, not at every interval, and the run's
    end says how many were lost."""
    import subprocess
    for args in (["-h"], ["--version"], ["runq", "-h"], ["report", "-h"], ["serve", "-h"],
                 ["doctor", "-f", "json"], ["doctor"]):
        for to in (">/dev/full", ">&-"):
            p = subprocess.run(["bash", "-c", f"'{LATHIST}' {' '.join(args)} {to}"],
                               capture_output=True, text=True, timeout=60)
            check(p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and
                  ("cannot write to standard output" in p.stderr or
                   "standard output is closed" in p.stderr),
                  f"{args} {to}: rc {p.returncode}, {p.stderr!r}")
    # a reader that quits early is no failure of help text over stdio's 4 KiB buffer:
    # exit 0 (it was 1 with "Broken pipe" about every other time)
    for args in (["runq", "-h"], ["doctor", "-f", "json"]):
        for _ in range(6):
            p = subprocess.run(["bash", "-c", f"'{LATHIST}' {' '.join(args)} | head -c 10 "
                                ">/dev/null; exit ${PIPESTATUS[0]}"],
                               capture_output=True, text=True, timeout=60)
            check(p.returncode in (0, 1 if args[0] == "doctor" else 0) and
                  "cannot write" not in p.stderr, f"{args} | head: rc {p.returncode}, "
                  f"{p.stderr!r}")
    with tempfile.TemporaryDirectory() as tmp:
        series = os.path.join(tmp, "s.json")
        p = subprocess.run(["bash", "-c", f"'{LATHIST}' runq -i 0.2 -d 1 --series '{series}' "
                            ">/dev/full"], capture_output=True, text=True, timeout=60)
        with open(series) as f:
            n = len(f.read().splitlines())
    lines = p.stderr.splitlines()
    check(p.returncode == 1 and n > 1 and
          sum("cannot write to standard output: No space left" in l for l in lines) == 1 and
          sum(f"the last {n} reports could not be written to standard output" in l
              for l in lines) == 1, f"rc {p.returncode}, {n} intervals: {p.stderr!r}")


def test_no_output_writes_through_a_hard_link():
    """One rule for every output file: one with other hard links is refused (exit 2, one
    line), and the linked file keeps its content; before, --events and --series wrote
    into it while -o replaced only its own name."""
    with tempfile.TemporaryDirectory() as tmp:
        keep, link = os.path.join(tmp, "keep"), os.path.join(tmp, "link")
        with open(keep, "w") as f:
            f.write("keep\n")
        os.link(keep, link)
        for args in (["runq", "-d", "0.2", "-o", link],
                     ["runq", "-d", "0.2", "--slower-than", "0", "--events", link],
                     ["runq", "-d", "0.4", "-i", "0.1", "--series", link],
                     ["report", "-o", link, "/dev/null"],
                     ["report", "--heatmap", link, "/dev/null"]):
            rc, out, err = run(*args)
            check(rc == 2 and "has other hard links" in err and
                  len(err.strip().splitlines()) == 1, f"{args}: rc {rc}, {err!r}")
            with open(keep) as f:
                check(f.read() == "keep\n", f"{args}: the linked file changed")


def test_records_reach_the_file_while_tracing():
    """Without -i, records reach --events while the run goes on, as README says (the
    loader looks every 100 ms), and a SIGKILL keeps what was written, whole lines only.
    Before, records submitted without a wakeup (below a quarter of the ring buffer) were
    read only at the end: the file stayed empty for the whole run and a SIGKILL lost all."""
    import signal
    import statistics
    import threading
    import time
    from lh import Lathist
    done = threading.Event()

    def sleeper():		# a wait, so a record, every ~5 ms: far below a quarter ring
        while not done.is_set():
            time.sleep(0.005)
    threading.Thread(target=sleeper, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        events = os.path.join(tmp, "e.json")
        # this process's tasks only: the whole machine's records under load (~80k/s) made
        # a file of gigabytes that each look read again
        t = Lathist("runq", "-p", str(os.getpid()), "--slower-than", "0", "--events", events,
                    "-o", os.path.join(tmp, "r.txt")).start()
        counts, ages = [], []
        try:
            for _ in range(8):
                time.sleep(0.25)
                lines = read_lines(events, growing=True)
                now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)	# after: ages >= 0
                counts.append(len(lines))
                if lines:
                    ages.append((now - max(r["ts_ns"] for r in lines)) / 1e6)
        finally:
            rc, _, err = t.stop(signal.SIGKILL)
            done.set()
        check(rc == -signal.SIGKILL, f"rc {rc}: {err!r}")
        check(all(counts) and counts == sorted(counts) and counts[-1] > counts[0],
              f"records in the file at each look: {counts}")
        # the newest record is at most one look (100 ms) and one wait (5 ms) old when it
        # is written (and this read comes after it); the median leaves out a look the VM
        # delayed
        check(statistics.median(ages) <= 105,
              f"age of the newest record in the file, ms: {[round(a) for a in ages]}")
        # what was written before the SIGKILL stays (before, the file was empty: every
        # record was still in the ring); a SIGKILL in a write can cut the last line
        # (README), which growing= leaves out
        check(len(read_lines(events, growing=True)) >= counts[-1] > 0,
              "no lines after the SIGKILL")


def test_slow_consumer_still_ends_on_a_signal():
    """A consumer slower than the records (each one it reads makes another: its own
    wakeup) reads for 100 ms at a time, so SIGINT ends the run at once, not at the end of
    the interval (reading until the interval's end held it 7 s)."""
    import time
    with tempfile.TemporaryDirectory() as tmp:
        # a small ring buffer: what waits in it at the end is read before the run ends, at
        # 3 ms a record (256 KiB of them took 9 s on a loaded machine)
        t = Lathist("runq", "--slower-than", "0", "--events", os.path.join(tmp, "e.json"),
                    "--ringbuf-size", "8k", "-i", "8", "-d", "20", "-o",
                    os.path.join(tmp, "r.txt"),
                    test="consumer-delay-us=3000").start()
        time.sleep(1.5)
        t0 = time.monotonic()
        rc, _, err = t.stop()
        took = time.monotonic() - t0
        # a read of at most 100 ms, then the end of the run: its last read and report
        check(rc == 0 and took < 2, f"rc {rc}, {took:.1f} s after SIGINT: {err[-300:]!r}")
