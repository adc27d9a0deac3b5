"""lathist serve against real parts on 127.0.0.1: its endpoints and both exposition formats
(promtool, a strict OpenMetrics parser), a real Prometheus (Debian's, unpacked, no service)
scraping it every second while known workloads run (counts against schedstat and a side-by-side
lathist runq, quantiles within lathist's own percentile bounds, no counter reset, every PromQL
expression of contrib/grafana-lathist.json answering), a 20,000-thread storm under
--max-series, stalled clients, SIGTERM with programs detached, and its refusals."""
import http.server
import json
import math
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from lh import (BIOWORK, LATHIST, RUNQWORK, ROOT, TOOLS, Lathist, LoopDevice, Serve, Workload, by_id,
                check, free_port, per_task, run)
from test_exports import samples
from test_runq import CPU, COUNT_SLACK, LossBudget, cgroup2_mount, rmdir_retry

DASHBOARD = os.path.join(ROOT, "contrib", "grafana-lathist.json")
OM = "application/openmetrics-text; version=1.0.0"
# series that only ever grow: counters, histogram parts, the aggregate's duration, the flag
# The side-by-side lathist runq attaches after serve: at both ends of a wait its programs run
# after serve's, so each wait it measures differs from serve's by the difference of the run
# times of the programs ahead of it (a few hundred ns each, bpf_stats; interrupts are off in
# sched_switch and under the wakeup's runqueue lock), which moves a few waits near a slot
# edge into the next slot: its percentile slot is widened by this much on each side.
SECOND_TRACER_S = 10e-6
GROWING = ("_total", "_bucket", "_count", "_sum", "_duration_seconds", "_biased")


def histograms(s):
    """{(family, labels without le): {le: cumulative count}} of samples()."""
    out = {}
    for (name, labels), v in s.items():
        if name.endswith("_bucket"):
            lab = dict(labels)
            le = lab.pop("le")
            out.setdefault((name[:-7], frozenset(lab.items())), {})[le] = v
    return out


def whole(text, what):
    """One scrape shows whole intervals: every histogram's buckets are cumulative with +Inf
    equal to _count, and each tool's _count over all its series (other included; bio's
    total stage) equals its paired events."""
    s = samples(text)
    for (base, lab), b in histograms(s).items():
        vals = [b[le] for le in sorted(b)]
        check(vals == sorted(vals), f"{what}: {base} {dict(lab)}: buckets not cumulative")
        check(b[math.inf] == s[(base + "_count", lab)],
              f"{what}: {base} {dict(lab)}: +Inf {b[math.inf]} != _count")
    for tool in ("runq", "bio"):
        paired = [v for (n, l), v in s.items()
                  if n == f"lathist_{tool}_events_total" and ("class", "paired") in l]
        counts = count_total(s, tool)
        check(len(paired) <= 1, f"{what}: {tool}: {len(paired)} paired counters")
        if paired:
            check(counts == paired[0], f"{what}: {tool}: the series count {counts} waits, "
                                       f"paired says {paired[0]}")
    return s


def count_total(s, tool):
    """Every event tool has counted: its series' _count (bio: the total stage) and the
    events of series dropped after --fold-idle (lathist_<tool>_retired_events_total)."""
    def counted(n, l):
        if tool == "bio" and ("stage", "total") not in l and ("kind", "total") not in l:
            return False
        return n in (f"lathist_{tool}_latency_seconds_count",
                     f"lathist_{tool}_retired_events_total")
    return sum(v for (n, l), v in s.items() if counted(n, l))


def no_decrease(prev, cur, what):
    """No series present in both scrapes went down, nor any tool's count of every event;
    and what Prometheus's increase() adds up over the series from one scrape to the next
    (each series less itself before, a new one from 0, one gone counts nothing) is exactly
    the events counted in between: a key losing its series (--fold-idle) shows no burst."""
    for k, v in cur.items():
        if k[0].endswith(GROWING) and k in prev:
            check(v >= prev[k], f"{what}: {k[0]} {dict(k[1])} went from {prev[k]} to {v}")
    if not prev:
        return
    for tool in ("runq", "bio"):
        name = f"lathist_{tool}_latency_seconds_count"
        if not any(n == name for n, _ in cur):
            continue
        inc = sum(v - prev.get((n, l), 0) for (n, l), v in cur.items()
                  if n == name and (tool == "runq" or ("stage", "total") in l))
        real = count_total(cur, tool) - count_total(prev, tool)
        check(real >= 0, f"{what}: {tool}'s events went from {count_total(prev, tool)} to "
                         f"{count_total(cur, tool)}")
        check(inc == real, f"{what}: {tool}: the series grew by {inc}, the events by {real}")


def own_keys(s, tool):
    """How many keys of tool have series of their own (not the "other" key)."""
    return len({frozenset((a, b) for a, b in l if a not in ("kind", "stage"))
                for (n, l), _ in s.items() if n == f"lathist_{tool}_latency_seconds_count" and
                ("tid", "other") not in l and ("pid", "other") not in l and
                ("cgroup", "other") not in l and ("disk", "other") not in l})


class Poller(threading.Thread):
    """Scrapes a serve every `every` seconds (both formats in turn) until stopped; each
    scrape whole(), no scrape below the one before; keeps the count and the largest body."""

    def __init__(self, srv, every=0.3):
        super().__init__(daemon=True)
        self.srv, self.every, self.halt = srv, every, threading.Event()
        self.n, self.errors, self.max_bytes, self.max_s, self.last = 0, [], 0, 0.0, {}
        self.max_own = 0	# the most runq keys with series of their own in one scrape

    def run(self):
        prev = {}
        while not self.halt.is_set():
            try:
                t0 = time.monotonic()
                st, _, body = self.srv.get(accept=OM if self.n % 2 else None)
                dt = time.monotonic() - t0
                check(st == 200, f"scrape {self.n}: HTTP {st}")
                cur = whole(body, f"scrape {self.n}")
                no_decrease(prev, cur, f"scrape {self.n}")
                prev = self.last = cur
                self.n += 1
                self.max_own = max(self.max_own, own_keys(cur, "runq"))
                self.max_bytes, self.max_s = max(self.max_bytes, len(body)), max(self.max_s, dt)
            except Exception as e:	# reported by finish(), in the test's thread
                self.errors.append(e)
                return
            self.halt.wait(self.every)

    def finish(self):
        self.halt.set()
        self.join(30)
        if self.errors:
            raise self.errors[0]
        check(self.n >= 3, f"only {self.n} scrapes")
        return self


def prog_ids():
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"] for p in json.loads(out)}


def own_prog_ids(pid):
    """The BPF programs process pid holds open (fdinfo's prog_id): its own, whatever other
    tracers load meanwhile."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                ids |= {int(l.split()[1]) for l in f if l.startswith("prog_id:")}
        except OSError:
            pass
    return ids


def promtool_check(text):
    p = subprocess.run([os.path.join(TOOLS, "promtool"), "check", "metrics"], input=text,
                       capture_output=True, text=True)
    check(p.returncode == 0, f"promtool check metrics: rc {p.returncode} {p.stdout}{p.stderr}")


def test_serve_endpoints_and_formats():
    """/ names the endpoint, other paths 404, other methods 405; /metrics is Prometheus text
    0.0.4 that promtool accepts, or OpenMetrics 1.0 with # EOF that a strict parser accepts
    when Accept asks; the same series in both; _info names kernel, version and attach
    types; --label is on every sample; SIGTERM ends it with exit 0."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    srv = Serve("-i", "0.3", "--label", "site=lab").start()
    try:
        st, h, body = srv.get("/")
        check(st == 200 and 'href="/metrics"' in body and h["Content-Type"].startswith(
            "text/html"), f"/: {st} {h.get('Content-Type')} {body[:80]!r}")
        for path in ("/nope", "/metrics/", "/metricsx", "/index.html"):
            st, _, body = srv.get(path)
            check(st == 404 and "/metrics" in body, f"{path}: {st} {body!r}")
        for method in ("POST", "PUT", "DELETE"):
            st, h, _ = srv.get(method=method)
            check(st == 405 and "GET" in h.get("Allow", ""), f"{method}: {st} {h}")
        st, h, _ = srv.get(method="HEAD")
        check(st == 200, f"HEAD: {st}")
        srv.first_interval()
        st, h, text = srv.get()
        check(st == 200 and h["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8",
              f"/metrics: {st} {h['Content-Type']}")
        st, h, om = srv.get(accept="application/openmetrics-text;version=1.0.0,text/plain;"
                                   "version=0.0.4;q=0.5")
        check(h["Content-Type"].startswith(OM), f"OpenMetrics asked: {h['Content-Type']}")
        check(h.get("Vary") == "Accept", f"no Vary: Accept: {h}")
        for accept, want in (("application/openmetrics-text;q=0", "text/plain"),
                             ("text/plain;q=1,application/openmetrics-text;q=0.5", "text/plain"),
                             ("Application/OpenMetrics-Text", OM), ("*/*", "text/plain")):
            st, h, _ = srv.get(accept=accept)
            check(h["Content-Type"].startswith(want), f"Accept {accept}: {h['Content-Type']}")
    finally:
        rc, _, err = srv.stop(signal.SIGTERM)
    check(rc == 0, f"SIGTERM: exit {rc}: {err}")
    # SIGTERM wakes the tools in the middle of a long interval
    srv = Serve("-i", "30").start()
    t0 = time.monotonic()
    rc, _, err = srv.stop(signal.SIGTERM)
    check(rc == 0 and time.monotonic() - t0 < 5, f"SIGTERM with -i 30: exit {rc} after "
                                                 f"{time.monotonic() - t0:.1f} s: {err}")
    promtool_check(text)
    check(om.endswith("\n# EOF\n") and "# EOF" not in text, "# EOF: only OpenMetrics, at its end")
    fams = {f.name: f for f in text_string_to_metric_families(om)}
    for tool in ("runq", "bio"):
        for fam in ("latency_seconds", "events", "losses", "biased", "info", "series",
                    "series_folded", "duration_seconds"):
            check(f"lathist_{tool}_{fam}" in fams, f"OpenMetrics: no lathist_{tool}_{fam}")
    check("lathist_runq_kernel_gaps" in fams, "no kernel gaps family")
    # default grouping (one key per tool): the same series in both formats
    a, b = samples(text), samples(om)
    check(set(a) == set(b), f"series differ: {sorted(set(a) ^ set(b))[:4]}")
    check(all(dict(l).get("site") == "lab" for _, l in a), "--label site=lab not on every sample")
    version = run("--version")[1].split()[-1]
    for tool in ("runq", "bio"):
        info = [dict(l) for (n, l) in a if n == f"lathist_{tool}_info"]
        check(len(info) == 1, f"{tool}: {len(info)} _info series")
        i = info[0]
        check(i["kernel"] == os.uname().release and i["version"] == version,
              f"{tool} _info: {i}")
        att = [v for k, v in i.items() if k.startswith("attach_")]
        check(att and set(att) <= {"tp_btf", "raw_tp"}, f"{tool} _info attach types: {i}")
    for what, s in (("text", text), ("openmetrics", om)):
        whole(s, what)


def test_serve_refusals():
    """A port in use is one line and exit 1 (nothing loaded); bad values are one line naming
    the value, exit 2."""
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        # nothing loaded: no BPF_PROG_LOAD in its system calls (other tracers on the host
        # may load programs meanwhile, so the host's program list cannot tell)
        with tempfile.NamedTemporaryFile(prefix="lathist-strace-") as tr:
            p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=bpf", "-o", tr.name,
                                LATHIST, "serve", "--listen", f"127.0.0.1:{port}"],
                               capture_output=True, text=True, timeout=30)
            rc, err, calls = p.returncode, p.stderr, open(tr.name).read()
        check(rc == 1 and len(err.splitlines()) == 1 and f"127.0.0.1:{port}" in err and
              "in use" in err, f"port in use: rc {rc} {err!r}")
        check("BPF_PROG_LOAD" not in calls, f"a refused serve loaded programs: {calls[:300]}")
    finally:
        busy.close()
    for args, value in ((["--listen", "127.0.0.1:99999"], "99999"),
                        (["--listen", "localhost"], "localhost"),
                        (["--listen", "[::1]"], "no port after the bracketed address"),
                        # an address or a port? IPv6 goes in brackets
                        (["--listen", "::1:9583"], "an IPv6 address goes in brackets"),
                        # Prometheus's target labels: a scrape would replace them
                        (["--label", "instance=a"], "instance is a target label"),
                        (["--tools", "runq,nope"], "nope"), (["--tools", ""], "--tools"),
                        (["--tools", "runq,"], "an empty name"),
                        (["--max-series", "0"], "0"), (["--fold-idle", "10ms"], "10ms"),
                        (["--tools", "runq", "--per-disk"], "--per-disk"),
                        # runq without a keyed grouping has no map --max-keys sizes
                        (["--tools", "runq", "--max-keys", "100"],
                         "--max-keys 100 sizes runq's --per-process, --per-thread or"),
                        (["--buckets", "1m..1us"], "1m..1us"), (["-i", "0"], "0"),
                        (["--label", "9x=1"], "9x"), (["extra"], "extra"),
                        # an abbreviation of two forwarded options is not taken as one
                        (["--per-c"], "ambiguous (--per-cpu, --per-cgroup)"),
                        # serve's own one-value options, repeated
                        (["-i", "1", "-i", "2"], "-i given twice"),
                        (["-i", "1", "--interval", "3"], "-i given twice"),
                        (["--tools", "runq", "--tools", "bio"], "--tools given twice"),
                        (["--tools", "runq,runq"], "'runq' is given twice"),
                        (["--fold-idle", "5s", "--fold-idle", "6s"], "--fold-idle given twice"),
                        # a forwarded option one tool refuses ends serve, exit 2
                        (["--cpus", "9999", "--listen", f"127.0.0.1:{free_port()}"], "9999"),
                        (["--disk", "nosuchdisk", "--listen", f"127.0.0.1:{free_port()}"],
                         "nosuchdisk")):
        rc, out, err = run("serve", *args, timeout=30)
        check(rc == 2 and len(err.splitlines()) == 1 and value in err and not out,
              f"serve {args}: rc {rc} {err!r}")


def test_serve_stalled_clients_and_sigterm():
    """Clients that send half a request, or ask and never read, hold only their own
    connection: a scrape still answers, the tools still read their maps every interval;
    SIGTERM with them still connected ends serve with exit 0 and detaches every program."""
    srv = Serve("-i", "0.2", "--per-thread").start()
    stalled = []
    try:
        mine = own_prog_ids(srv.pid)
        check(mine, "no BPF program loaded while serving")
        for i in range(20):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")		# and nothing more
            stalled.append(s)
        for i in range(10):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            s.connect(("127.0.0.1", srv.port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 50)	# never read
            stalled.append(s)
        srv.first_interval()
        durations = []
        for _ in range(2):
            t0 = time.monotonic()
            st, _, body = srv.get(timeout=5)
            check(st == 200, f"scrape beside stalled clients: {st}")
            durations.append(next(v for (n, _), v in samples(body).items()
                                  if n == "lathist_runq_duration_seconds"))
            time.sleep(1.0 - min(1.0, time.monotonic() - t0))
        check(durations[1] - durations[0] >= 0.6, f"the aggregate covered {durations}: the "
                                                  "tools stopped reading beside stalled clients")
        t0 = time.monotonic()
        rc, _, err = srv.stop(signal.SIGTERM, timeout=30)
        took = time.monotonic() - t0
    finally:
        for s in stalled:
            s.close()
    check(rc == 0, f"SIGTERM: exit {rc}: {err}")
    check(took < 10, f"SIGTERM took {took:.1f} s with stalled clients")
    # the kernel frees a detached program after an RCU grace period (tp_btf: an RCU tasks
    # trace one, for its trampoline), not at the exit itself
    for _ in range(100):
        left = mine & prog_ids()
        if not left:
            break
        time.sleep(0.1)
    check(not left, f"programs {sorted(left)} still loaded 10 s after serve ended")


class AcceptRecorder(http.server.BaseHTTPRequestHandler):
    """A scrape target that keeps the Accept header Prometheus sends and serves one gauge."""
    seen = []

    def do_GET(self):
        AcceptRecorder.seen.append(self.headers.get("Accept", ""))
        body = b"probe 1\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


class Prometheus:
    """Debian's Prometheus scraping the given {job: "host:port"} every second."""

    def __init__(self, tmp, targets):
        self.port = free_port()
        cfg = os.path.join(tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n")
            for job, addr in targets.items():
                f.write(f"  - job_name: {job}\n    static_configs:\n"
                        f"      - targets: ['{addr}']\n")
        self.log = os.path.join(tmp, "prometheus.log")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([os.path.join(TOOLS, "prometheus"),
                                          f"--config.file={cfg}",
                                          f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
                                          f"--web.listen-address=127.0.0.1:{self.port}"],
                                         stdout=subprocess.DEVNULL, stderr=log)
        for _ in range(300):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=1)
                return
            except OSError:
                check(self.proc.poll() is None, "prometheus exited: " +
                      open(self.log).read()[-2000:])
                time.sleep(0.1)
        raise AssertionError("prometheus not ready in 30 s")

    def query(self, expr, at):
        """An instant query at `at` (unix seconds): [(labels, value)]; matrices as
        [(labels, [(t, value)])]."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?" +
               urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"}))
        try:
            r = json.load(urllib.request.urlopen(url, timeout=10))
        except urllib.error.HTTPError as e:
            r = json.load(e)
        check(r["status"] == "success", f"{expr}: {r}")
        d = r["data"]
        if d["resultType"] == "matrix":
            return [(m["metric"], [(t, float(v)) for t, v in m["values"]]) for m in d["result"]]
        if d["resultType"] == "scalar":
            return [({}, float(d["result"][1]))]
        return [(m["metric"], float(m["value"][1])) for m in d["result"]]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def in_cgroup(cg, exe, *args):
    """exe ARGS run from a shell that first moves itself into cgroup folder cg."""
    return ["-c", f'echo $$ > {cg}/cgroup.procs && exec "$0" "$@"', exe, *[str(a) for a in args]]


def expected_bounds(h, q):
    """Where lathist's own report puts percentile q of histogram h (JSON), as (lo, hi) in
    seconds, widened by its bias bounds (a lost event could have moved it)."""
    p = h["percentiles"][{0.5: "p50", 0.99: "p99"}[q]]
    lo = min(p["lo_ns"], (p["low"] or p)["lo_ns"])
    hi = p["hi_ns"] if p["high"] is not None else math.inf
    if p["high"]:
        hi = max(hi, p["high"]["hi_ns"])
    return lo / 1e9, hi / 1e9


def test_serve_prometheus_and_dashboard():
    """A real Prometheus scrapes two serves every second while `runqwork mix` and O_DIRECT
    I/O on a loop device run in a cgroup of their own: one serve as the unit file runs it
    (--per-cgroup --per-disk, the whole host), one for the workload's threads (-p PID
    --per-thread) beside a `lathist runq` of the same threads. Prometheus negotiates
    OpenMetrics; what it stored matches what was served; per thread, its counts match
    schedstat (within the losses serve reports) and the side-by-side run; histogram_quantile
    lies in lathist's own percentile slots; increase() lies within its extrapolation of the
    raw samples; no counter ever reset; every dashboard expression returns data."""
    mnt = cgroup2_mount()
    cg = os.path.join(mnt, f"lathist-serve-test-{os.getpid()}")
    os.makedirs(cg, exist_ok=True)
    rec = http.server.ThreadingHTTPServer(("127.0.0.1", 0), AcceptRecorder)
    threading.Thread(target=rec.serve_forever, daemon=True).start()
    prom = host = threads = side = None
    try:
        with tempfile.TemporaryDirectory() as tmp, LoopDevice(64, "mq-deadline") as loop:
            host = Serve("--per-cgroup", "--per-disk", "--label", "role=host").start()
            stat0 = loop.stat()
            work = Workload(*in_cgroup(cg, RUNQWORK, "mix", CPU, 2, 1, 15000), exe="sh")
            pid = work.start()
            threads = Serve("--tools", "runq", "--per-thread", "-p", str(pid)).start()
            side = Lathist("runq", "-f", "json", "--per-thread", "-p", str(pid)).start()
            prom = Prometheus(tmp, {"lathist": host.addr, "threads": threads.addr,
                                    "accept": f"127.0.0.1:{rec.server_address[1]}"})
            pollers = [Poller(host), Poller(threads)]
            for p in pollers:
                p.start()
            work.go()
            t_go = time.time()
            bio_done = 0
            while work.proc.poll() is None:		# I/O in the cgroup all along
                b = Workload(*in_cgroup(cg, BIOWORK, "direct", loop.dev, 300, 4096, 300, 16384),
                             exe="sh")
                b.start()
                b.go()
                b.wait()
                bio_done += 600
            t_mid = t_go + 8
            rows = work.wait()
            rc, out, err = side.stop()
            check(rc == 0, f"lathist runq: {err}")
            doc = json.loads(out)
            time.sleep(3)			# serve's last interval read, then scraped
            for p in pollers:
                p.finish()
            t_end = time.time()
            stat1 = loop.stat()
            check_stored(prom, t_end)
            check_threads(prom, t_end, rows, doc)
            check_window(prom, t_mid)
            check_dashboard(prom, t_mid, os.path.basename(cg), loop.name)
            check_bio(prom, t_end, loop.name, stat0, stat1, bio_done)
            accept = AcceptRecorder.seen[-1] if AcceptRecorder.seen else ""
            check("application/openmetrics-text" in accept, f"Prometheus asked for {accept!r}")
            st, h, _ = host.get(accept=accept)
            check(h["Content-Type"].startswith(OM), f"Prometheus's Accept got "
                                                    f"{h['Content-Type']}")
            for s in (host, threads):
                rc, _, err = s.stop(signal.SIGTERM)
                check(rc == 0, f"serve: exit {rc}: {err}")
    finally:
        if prom:
            prom.stop()
        rec.shutdown()
        rmdir_retry(cg)


def check_stored(prom, at):
    """Both targets up; no lathist counter ever went down in what Prometheus stored."""
    up = {m["job"]: v for m, v in prom.query("up", at)}
    check(up.get("lathist") == 1 and up.get("threads") == 1, f"up: {up}")
    names = json.load(urllib.request.urlopen(
        f"http://127.0.0.1:{prom.port}/api/v1/label/__name__/values", timeout=10))["data"]
    names = [n for n in names if n.startswith("lathist_") and n.endswith(GROWING)]
    check(len(names) >= 10, f"Prometheus holds only {names}")
    for n in names:
        resets = prom.query(f"sum(resets({n}[1m]))", at)
        check(resets and resets[0][1] == 0, f"Prometheus saw {n} reset: {resets}")


def check_threads(prom, at, rows, doc):
    """Per thread: the stored _count against schedstat (LossBudget: serve's own losses) and
    the side-by-side lathist runq; histogram_quantile within the side run's percentile
    bounds."""
    sel = '{job="threads"}'
    lost = sum(v for _, v in prom.query(f"lathist_runq_losses_total{sel}", at))
    served = {int(m["tid"]): v for m, v in
              prom.query(f"sum by (tid) (lathist_runq_latency_seconds_count{sel})", at)}
    tasks = by_id(per_task(doc))
    budget = LossBudget({"loss": {"lost": int(lost)}})
    for r in rows:
        got = served.get(r["tid"], 0)
        budget.check(int(got), r["pcount"], f"tid {r['tid']} in Prometheus")
        mine = tasks.get(r["tid"], {"count": 0})["count"]
        check(abs(got - mine) <= lost + doc["loss"]["lost"],
              f"tid {r['tid']}: Prometheus {got} waits, lathist runq {mine} (losses "
              f"{lost} + {doc['loss']['lost']})")
    checked = 0
    for q in (0.5, 0.99):
        for kind in ("wakeup", "preempt"):
            res = prom.query(f'histogram_quantile({q}, sum by (tid, le) '
                             f'(lathist_runq_latency_seconds_bucket{{job="threads",'
                             f'kind="{kind}"}}))', at)
            for m, v in res:
                h = tasks.get(int(m["tid"]), {"kinds": {}})["kinds"].get(kind)
                if not h or h["count"] < 20:
                    continue
                lo, hi = expected_bounds(h, q)
                check(lo - SECOND_TRACER_S <= v <= hi + SECOND_TRACER_S,
                      f"tid {m['tid']} {kind} p{q * 100:g}: Prometheus {v} s, lathist runq "
                      f"({lo}, {hi}] s (+- {SECOND_TRACER_S} s)")
                checked += 1
    check(checked >= 4, f"only {checked} quantiles compared")


def check_window(prom, at, w=10):
    """increase() over a window mid-run lies between the raw samples' own delta and that
    delta stretched to the window (Prometheus extrapolates to the window's edges, no
    further); histogram_quantile over rate() of the window lies in the bucket that the raw
    samples' delta puts the quantile in."""
    sel = 'lathist_runq_latency_seconds_count{job="threads"}'
    raw = {tuple(sorted(m.items())): v for m, v in prom.query(f"{sel}[{w}s]", at)}
    inc = {tuple(sorted(m.items())): v for m, v in prom.query(f"increase({sel}[{w}s])", at)}
    check(raw, "no raw samples in the window")
    for k, vals in raw.items():
        if len(vals) < 2:
            continue
        delta, span = vals[-1][1] - vals[0][1], vals[-1][0] - vals[0][0]
        i = inc[tuple((a, b) for a, b in k if a != "__name__")]
        check(delta - 1e-6 <= i <= delta * w / span + 1e-6,
              f"{dict(k)}: increase {i} outside [{delta}, {delta * w / span}]")
    bsel = 'lathist_runq_latency_seconds_bucket{job="threads",kind="wakeup"}'
    buckets = {}
    for m, vals in prom.query(f"{bsel}[{w}s]", at):
        le = float(m["le"])
        buckets[le] = buckets.get(le, 0) + vals[-1][1] - vals[0][1]
    total = buckets.get(math.inf, 0)
    if total < 20:
        return
    q = prom.query(f"histogram_quantile(0.99, sum by (le) (rate({bsel}[{w}s])))", at)[0][1]
    les = sorted(buckets)
    rank = 0.99 * total
    up = next(le for le in les if buckets[le] >= rank)
    below = max([le for le in les if le < up] or [0.0])
    check(below - 1e-12 <= q <= (up if up != math.inf else below) + 1e-12,
          f"window p99 {q} s not in the bucket ({below}, {up}] of the raw samples")


def check_dashboard(prom, at, cgroup, disk):
    """Every expression of contrib/grafana-lathist.json returns data (Grafana's variables
    as Grafana would fill them: every instance, a 5 s rate interval); the per-cgroup and
    per-disk panels show the workload's cgroup and the loop device."""
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = [(p["title"], t["expr"]) for p in dash["panels"] for t in p["targets"]]
    check(len(exprs) >= 15, f"{len(exprs)} expressions in the dashboard")
    for title, e in exprs:
        q = e.replace("$__rate_interval", "5s").replace("$instance", ".*")
        res = prom.query(q, at)
        vals = [v for _, v in res if not math.isnan(v)]
        check(vals, f"dashboard panel {title!r}: {q} returned no data ({res[:3]})")
        if "per cgroup" in title:
            check(any(m.get("cgroup", "").endswith(cgroup) and not math.isnan(v)
                      for m, v in res), f"{title!r}: no series for cgroup {cgroup}: {res}")
        if "per disk" in title:
            check(any(m.get("disk") == disk for m, _ in res), f"{title!r}: no {disk}: {res}")
    for var in dash["templating"]["list"]:
        q = var["query"]
        check(q.startswith("label_values("), f"variable {var['name']}: {q}")
        metric, label = q[len("label_values("):-1].split(", ")
        check(any(label in m for m, _ in prom.query(metric, at)), f"variable {var['name']}: "
                                                                   f"{metric} has no {label}")


def check_bio(prom, at, disk, stat0, stat1, issued):
    """The loop device's requests in Prometheus: each one /sys/block/DEV/stat completed, less
    only what serve counted as lost."""
    sel = f'{{job="lathist",disk="{disk}"}}'
    done = sum(v for _, v in prom.query(
        f'sum(lathist_bio_latency_seconds_count{{job="lathist",disk="{disk}",stage="total"}})',
        at))
    lost = sum(v for _, v in prom.query('sum(lathist_bio_losses_total{job="lathist"})', at))
    want = (stat1[0] - stat0[0]) + (stat1[1] - stat0[1])
    check(want >= issued, f"{disk}: stat says {want} requests, the workload made {issued}")
    check(want - lost <= done <= want, f"{disk}: Prometheus {done} requests, "
                                       f"/sys/block/{disk}/stat {want}, lost {lost} ({sel})")


def test_serve_thread_storm_bounded():
    """20,000 short threads one after the other under --per-thread --max-series 50
    --fold-idle 2s: every scrape has at most 50 keys of their own plus other, is whole and
    never below the one before, and its series grow by exactly the events counted since the
    last (a series dropped after --fold-idle makes no burst); it stays small and quick;
    other absorbs the rest, so the series and the retired tally add up to every thread's
    waits (schedstat pcount, within the losses); serve's memory stays bounded (the exited
    threads' keys are forgotten)."""
    work = Workload("churn", 20000, 0)
    pid = work.start()
    srv = Serve("--tools", "runq", "--per-thread", "-p", str(pid), "--max-series", "50",
                "--fold-idle", "2s", "-i", "0.25").start()
    side = Lathist("runq", "-f", "json", "-p", str(pid)).start()	# one key: nothing folds
    poll = Poller(srv, every=0.2)
    poll.start()
    work.go()
    rows = work.wait(timeout=600, leader=True)
    rc, out, err = side.stop()
    check(rc == 0, f"lathist runq: {err}")
    doc = json.loads(out)
    time.sleep(3)			# past --fold-idle: every short thread folded
    poll.finish()
    st, _, body = srv.get()
    rss_kb = int(next(l for l in open(f"/proc/{srv.pid}/status")
                      if l.startswith("VmRSS")).split()[1])
    rc, _, err = srv.stop(signal.SIGTERM)
    check(rc == 0, f"serve: exit {rc}: {err}")
    s = whole(body, "last scrape")
    check(len(rows) >= 20001, f"{len(rows)} threads reported")
    keys = {(l.get("tid"), l.get("start_ns")) for l in (dict(l) for (n, l) in s
                                                        if n.endswith("_count"))}
    own = [k for k in keys if k[0] != "other"]
    check(len(own) <= 50 and ("other", "other") in keys, f"{len(own)} keys of their own, "
                                                         f"other: {('other', 'other') in keys}")
    series = next(v for (n, _), v in s.items() if n == "lathist_runq_series")
    folded = next(v for (n, _), v in s.items() if n == "lathist_runq_series_folded_total")
    lost = sum(v for (n, _), v in s.items() if n == "lathist_runq_losses_total")
    # every key is counted once, in series (its own now) or folded (in other, or retired);
    # each of the 20,000 threads has a key unless every wait of it was lost (a loss each)
    check(series == len(own) and folded + series >= 20000 - lost,
          f"series {series}, folded {folded}, lost {lost}: under the 20000 threads' keys")
    total = count_total(s, "runq")	# the series, and those dropped after --fold-idle
    retired = sum(v for (n, _), v in s.items() if n == "lathist_runq_retired_events_total")
    check(retired > 0, "no series retired after --fold-idle 2s")
    # every thread's own count, and the main thread's (woken at every join), final: read
    # when the process was dead but not reaped
    pcount = sum(r["pcount"] for r in rows) + work.leader[2]
    check(pcount - lost <= total <= pcount + COUNT_SLACK * len(rows),
          f"all series {total} waits, the threads' pcount {pcount}, lost {lost}")
    # the threads' waits after their reading make the above loose; a lathist runq of the
    # same process beside it, with one key, sees the same events: equal within the losses
    mine = sum(h["count"] for h in doc["histograms"])
    check(abs(total - mine) <= lost + doc["loss"]["lost"],
          f"all series {total} waits, lathist runq {mine} (losses {lost} + "
          f"{doc['loss']['lost']})")
    # bounded: 51 keys x 2 kinds x 30 lines of ~200 bytes at most, against the 173 MB file
    # an unbounded --per-thread exposition grew to after such a storm
    check(0 < poll.max_own <= 50, f"a scrape during the storm had {poll.max_own} keys")
    check(poll.max_bytes < 700_000, f"a scrape of {poll.max_bytes} bytes")
    check(poll.max_s < 2, f"a scrape took {poll.max_s:.2f} s")
    check(rss_kb < 100_000, f"serve's RSS {rss_kb} kB after the storm")


def unit_settings(path):
    """{key: value} of a systemd unit's settings (later ones win; comments dropped)."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if "=" in line and not line.startswith(("#", ";", "[")):
                k, v = line.split("=", 1)
                out[k] = v
    return out


def test_service_unit_unprivileged():
    """contrib/lathist.service passes systemd-analyze verify, and its ExecStart run as the
    unit runs it (a user that is not root, only the unit's capabilities, no new
    privileges) serves both tools with data; SIGTERM ends it with exit 0."""
    unit = os.path.join(ROOT, "contrib", "lathist.service")
    u = unit_settings(unit)
    caps = u["AmbientCapabilities"].split()
    check(u["CapabilityBoundingSet"].split() == caps and "CAP_SYS_ADMIN" not in caps and
          u.get("DynamicUser") == "yes", f"the unit's privileges: {u}")
    argv = u["ExecStart"].split()
    check(argv[:2] == ["/usr/local/sbin/lathist", "serve"], f"ExecStart {argv}")
    port = free_port()
    argv = [a if not a.startswith("127.0.0.1:") else f"127.0.0.1:{port}" for a in argv[2:]]
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        exe = os.path.join(tmp, "lathist")
        subprocess.run(["cp", os.path.join(ROOT, "lathist"), exe], check=True)
        with open(unit) as f, open(os.path.join(tmp, "lathist.service"), "w") as g:
            g.write(f.read().replace("/usr/local/sbin/lathist", exe))
        p = subprocess.run(["systemd-analyze", "verify", "--man=no",
                            os.path.join(tmp, "lathist.service")], capture_output=True, text=True)
        check(p.returncode == 0, f"systemd-analyze verify: {p.stdout}{p.stderr}")
        names = ",".join("+" + c[len("CAP_"):].lower() for c in caps)
        srv = Serve(port=port)
        srv.proc.args = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                         "--no-new-privs", f"--inh-caps=-all,{names}",
                         f"--ambient-caps=-all,{names}", f"--bounding-set=-all,{names}",
                         exe, "serve", *argv]
        srv.start()
        try:
            with open(f"/proc/{srv.pid}/status") as f:
                status = dict(l.split(":", 1) for l in f)
            check(status["Uid"].split()[1] == "65534" and int(status["CapEff"], 16) != 0 and
                  int(status["CapEff"], 16) & (1 << 21) == 0, f"serve ran as {status['Uid']}, "
                                                          f"CapEff {status['CapEff']}")
            body = samples(srv.first_interval())
        finally:
            rc, _, err = srv.stop(signal.SIGTERM)
    check(rc == 0, f"serve as the unit runs it: exit {rc}: {err}")
    for tool in ("runq", "bio"):
        info = [dict(l) for (n, l) in body if n == f"lathist_{tool}_info"]
        check(info and "cgroup" in info[0]["grouping"], f"{tool}: not served per cgroup: {info}")
    check(any(n == "lathist_runq_latency_seconds_count" and v > 0 for (n, _), v in body.items()),
          "no runqueue wait served")


def test_serve_unprivileged_says_so_once():
    """Without root or CAP_BPF and CAP_PERFMON: one line naming what is missing, exit 1,
    before the port is bound; before, each tool said it and then that serve was "serving
    the others", which there were none of."""
    with tempfile.NamedTemporaryFile(prefix="lathist-strace-") as tr:
        p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=bind", "-o", tr.name,
                            "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            "--inh-caps=-all", "--bounding-set=-all", LATHIST, "serve",
                            "--listen", f"127.0.0.1:{free_port()}"],
                           capture_output=True, text=True, timeout=60)
        calls = open(tr.name).read()
    check("bind(" not in calls, f"an unprivileged serve bound its port: {calls[:300]}")
    check(p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and
          "lathist serve: needs root, or CAP_BPF and CAP_PERFMON" in p.stderr and
          "serving" not in p.stderr.lower() and not p.stdout,
          f"rc {p.returncode}: {p.stderr!r}")
