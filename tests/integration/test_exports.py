"""Exports and lathist report: JSON against its JSON Schema, CSV through a real CSV reader,
OpenMetrics through promtool and a real node_exporter scrape, report merges by exact
addition and refuses bad input, the heatmap is well-formed and not blank."""
import csv
import io
import json
import re
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import xml.etree.ElementTree as ET
import zlib

from lh import (BIOWORK, LATHIST, ROOT, TOOLS, Lathist, LoopDevice, Workload, by_id, check,
                _readline, free_port, full_tmpfs, paragraph, per_task, run, traced)
from test_runq import CPU, COUNT_SLACK, LossBudget

SCHEMA = os.path.join(ROOT, "docs", "lathist-1.schema.json")


def validate(doc):
    import jsonschema
    with open(SCHEMA) as f:
        schema = json.load(f)
    errs = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
    check(not errs, f"{len(errs)} schema errors, first: {errs[0].message if errs else ''} at "
                    f"{list(errs[0].absolute_path) if errs else ''}")


def report(*args, stdin=None):
    p = subprocess.run([LATHIST, "report", *args], capture_output=True, text=True, input=stdin,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_json_matches_schema():
    """Real output of every shape: runq per thread with counters, records and intervals;
    runq per CPU; bio per process, disk and op."""
    with tempfile.TemporaryDirectory() as tmp:
        _, doc = traced(Workload("mix", CPU, 1, 1, 300), "--per-thread", "--counters",
                        "cpu-clock,page-faults", "--slower-than", "1ms", "--events",
                        os.path.join(tmp, "e.json"))
        validate(doc)
        rc, out, err = run("runq", "-f", "json", "--per-cpu", "-i", "0.2", "-d", "0.5",
                           "--cpus", "0")
        check(rc == 0, err)
        for line in out.splitlines():
            validate(json.loads(line))
        with LoopDevice() as dev:
            work = Workload("direct", dev.dev, 5, 4096, 5, 4096, exe=BIOWORK)
            work.start()
            tool = Lathist("bio", "-f", "json", "--per-process", "--per-disk", "--per-op",
                           "--disk", dev.name).start()
            work.go()
            work.wait()
            rc, out, err = tool.stop()
        check(rc == 0, err)
        doc = json.loads(out)
        check(len(doc["histograms"]) >= 6, f"{len(doc['histograms'])} bio histograms")
        validate(doc)


def test_csv_reads_back_as_json():
    """-f csv of a saved run (lathist report) parses with Python's csv module to the same
    slot counts as its JSON; a live CSV run counts the workload's waits."""
    with tempfile.TemporaryDirectory() as tmp:
        rows, doc = traced(Workload("mix", CPU, 2, 1, 500), "--per-thread")
        saved = os.path.join(tmp, "run.json")
        with open(saved, "w") as f:
            json.dump(doc, f)
        rc, out, err = report("-f", "csv", saved)
        check(rc == 0, err)
        table = list(csv.DictReader(io.StringIO(out, newline="")))
        from_csv = {(r["histogram"], int(r["tid"]), int(r["lo_ns"])): int(r["count"])
                    for r in table}
        from_json = {(h["name"], h["key"]["tid"], s["lo_ns"]): s["count"]
                     for h in doc["histograms"] for s in h["slots"]}
        check(from_csv == from_json, f"{len(from_csv)} CSV cells vs {len(from_json)} JSON slots")
        # live CSV: per thread, as many waits as schedstat's pcount, fewer only by the
        # losses the same run reports (CSV has no loss table: the run's --series JSON
        # line, one interval longer than the run, carries it)
        series = os.path.join(tmp, "series.json")
        work = Workload("mix", CPU, 2, 0, 400)
        pid = work.start()
        tool = Lathist("runq", "-f", "csv", "--per-thread", "-p", str(pid), "-i", "60",
                       "--series", series).start()
        work.go()
        rows = work.wait()
        rc, out, err = tool.stop()
        check(rc == 0, err)
        with open(series) as f:
            docs = [json.loads(l) for l in f]
        check(len(docs) == 1, f"{len(docs)} intervals in --series")
        counts = {}
        for r in csv.DictReader(io.StringIO(out, newline="")):
            counts[int(r["tid"])] = counts.get(int(r["tid"]), 0) + int(r["count"])
        budget = LossBudget(docs[0])
        for r in rows:
            budget.check(counts.get(r["tid"], 0), r["pcount"], f"tid {r['tid']}: CSV")


def test_csv_quotes_a_comm_with_comma_and_quote():
    """A process named a,b"c: RFC 4180 quoting round-trips through a CSV reader."""
    prog = ("import ctypes,sys,time\n"
            "ctypes.CDLL(None).prctl(15, b'a,b\"c', 0, 0, 0)\n"
            "print('ready', flush=True); sys.stdin.readline()\n"
            "for _ in range(200): time.sleep(0.001)\n")
    p = subprocess.Popen(["python3", "-c", prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    p.stdout.readline()
    tool = Lathist("runq", "-f", "csv", "--per-process", "-p", str(p.pid)).start()
    p.stdin.write(b"\n")
    p.stdin.flush()
    p.wait(timeout=30)
    rc, out, err = tool.stop()
    check(rc == 0, err)
    comms = {r["comm"] for r in csv.DictReader(io.StringIO(out, newline=""))}
    check(comms == {'a,b"c'}, f"comms {comms}")


def parse_labels(body):
    """'a="x",b="y\\"z"' -> {"a": "x", "b": 'y"z'} (exposition escapes undone)."""
    out, i = {}, 0
    while i < len(body):
        eq = body.index("=", i)
        name, i, val = body[i:eq].lstrip(","), eq + 2, ""
        while body[i] != '"':
            if body[i] == "\\":
                i += 1
                val += {"n": "\n"}.get(body[i], body[i])
            else:
                val += body[i]
            i += 1
        out[name] = val
        i += 1
    return out


def samples(text):
    """{(name, labels): value} of the lathist samples in an exposition; le as a number,
    so that 0.000001 and 1e-06 are the same bucket."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("lathist_"):
            continue
        series, value = line.rsplit(" ", 1)
        name, _, rest = series.partition("{")
        labels = parse_labels(rest[:-1]) if rest else {}
        if "le" in labels:
            labels["le"] = float(labels["le"])
        key = (name, frozenset(labels.items()))
        check(key not in out, f"series {name} {labels} appears twice in one exposition")
        out[key] = float(value)
    return out


def node_exporter_scrape(folder):
    """One scrape of a real node_exporter reading a textfile folder (nothing else)."""
    port = free_port()
    ne = subprocess.Popen([os.path.join(TOOLS, "prometheus-node-exporter"),
                           f"--web.listen-address=127.0.0.1:{port}",
                           "--collector.disable-defaults", "--collector.textfile",
                           f"--collector.textfile.directory={folder}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        body = None
        for _ in range(100):
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics",
                                              timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.1)
    finally:
        ne.terminate()
        ne.wait(timeout=10)
    check(body is not None, "node_exporter did not answer")
    check("node_textfile_scrape_error 0" in body, "node_exporter could not read the folder")
    return body


def test_textfile_runs_do_not_collide():
    """Two runs writing one textfile folder (--cpus 0 and --cpus 1; then the same filters
    told apart by --label): every series carries lathist_run (grouping and filters), so
    node_exporter serves every sample of every file, none dropped as a duplicate (before,
    the second file's series collided with the first's and were dropped, with HTTP 200 and
    node_textfile_scrape_error 0)."""
    with tempfile.TemporaryDirectory() as tmp:
        runs = [(["--cpus", "0"], "a"), (["--cpus", "1"], "b"),
                (["--cpus", "1", "--label", "replica=2"], "c")]
        tools = [Lathist("runq", "-f", "prometheus", "-o", os.path.join(tmp, f"{n}.prom"),
                         "-d", "0.5", *args).start() for args, n in runs]
        for t in tools:
            rc, _, err = t.wait()
            check(rc == 0, err)
        texts = {n: open(os.path.join(tmp, f"{n}.prom")).read() for _, n in runs}
        served = samples(node_exporter_scrape(tmp))
    want_runs = {"a": "total,cpus=0", "b": "total,cpus=1", "c": "total,cpus=1"}
    for n, text in texts.items():
        mine = samples(text)
        check(mine and all(dict(l).get("lathist_run") == want_runs[n] for _, l in mine),
              f"{n}: lathist_run not on every sample")
        missing = [k for k, v in mine.items() if served.get(k) != v]
        check(not missing, f"{n}: {len(missing)} of {len(mine)} samples not served as written, "
                           f"e.g. {missing[:2]}")
    check(all(dict(l).get("replica") == "2" for _, l in samples(texts["c"])),
          "--label replica=2 not on every sample")


def test_openmetrics_promtool_and_node_exporter():
    """-f prometheus into a node_exporter textfile folder: promtool accepts it, a real
    node_exporter serves every lathist sample with the same value, the per-thread counts
    match schedstat, and the buckets are cumulative with +Inf equal to _count."""
    with tempfile.TemporaryDirectory() as tmp:
        prom = os.path.join(tmp, "lathist.prom")
        work = Workload("mix", CPU, 2, 1, 500)
        pid = work.start()
        tool = Lathist("runq", "-f", "prometheus", "-o", prom, "--per-thread", "-p",
                       str(pid)).start()
        work.go()
        rows = work.wait()
        rc, _, err = tool.stop()
        check(rc == 0, err)
        with open(prom) as f:
            text = f.read()
        p = subprocess.run([os.path.join(TOOLS, "promtool"), "check", "metrics"], input=text,
                           capture_output=True, text=True)
        check(p.returncode == 0, f"promtool: {p.stdout} {p.stderr}")
        body = node_exporter_scrape(tmp)
    mine, served = samples(text), samples(body)
    check(mine and all(served.get(k) == v for k, v in mine.items()),
          f"{sum(served.get(k) != v for k, v in mine.items())} of {len(mine)} samples differ")
    lost = sum(v for (name, _), v in mine.items() if name == "lathist_runq_losses_total")
    budget = LossBudget({"loss": {"lost": int(lost)}})
    for r in rows:
        tid = ("tid", str(r["tid"]))

        def series(name, kind=None):
            return {dict(l).get("le"): v for (n, l), v in served.items()
                    if n == name and tid in l and (kind is None or ("kind", kind) in l)}

        count = sum(v for (n, l), v in served.items()
                    if n == "lathist_runq_latency_seconds_count" and tid in l)
        budget.check(int(count), r["pcount"], f"tid {r['tid']} served _count")
        for kind in ("wakeup", "preempt"):
            b = series("lathist_runq_latency_seconds_bucket", kind)
            if not b:
                continue
            inf = b.pop(float("inf"))
            vals = [b[le] for le in sorted(b)]
            check(vals == sorted(vals) and vals[-1] <= inf, f"tid {r['tid']} {kind}: "
                                                             "buckets not cumulative")
            check(inf == series("lathist_runq_latency_seconds_count", kind)[None],
                  f"tid {r['tid']} {kind}: +Inf differs from _count")


def test_openmetrics_strict_and_cumulative():
    """-f openmetrics parses with a strict OpenMetrics parser (prometheus_client); with -i
    each file holds the totals since the start (counters never go down): the last one
    equals the sum of every interval's JSON (--series)."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    with tempfile.TemporaryDirectory() as tmp:
        prom, series = os.path.join(tmp, "l.prom"), os.path.join(tmp, "s.jsonl")
        work = Workload("mix", CPU, 1, 1, 1200)
        pid = work.start()
        tool = Lathist("runq", "-f", "openmetrics", "-o", prom, "-i", "0.3", "--series", series,
                       "--per-thread", "-p", str(pid)).start()
        work.go()
        work.wait()
        rc, _, err = tool.stop()
        check(rc == 0, err)
        text = open(prom).read()
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        check({"lathist_runq_latency_seconds", "lathist_runq_events", "lathist_runq_losses",
               "lathist_runq_info"} <= set(fams), f"families {sorted(fams)}")
        docs = [json.loads(l) for l in open(series)]
        check(len(docs) >= 3, f"{len(docs)} intervals")
        want = {}
        for d in docs:
            for h in d["histograms"]:
                k = (h["name"], str(h["key"]["tid"]))
                want[k] = want.get(k, 0) + h["count"]
        got = {}
        for smp in fams["lathist_runq_latency_seconds"].samples:
            if smp.name.endswith("_count"):
                got[(smp.labels["kind"], smp.labels["tid"])] = int(smp.value)
        check(got == want, f"cumulative _count {got} vs intervals summed {want}")
        events = [s.value for s in fams["lathist_runq_events"].samples
                  if s.labels.get("class") == "events"]
        check(events == [sum(d["loss"]["events"] for d in docs)], f"events {events}")


def charge_first_key(doc, n=3):
    """A quiet run loses nothing: give a --per-thread document's first key n lost waits
    (unpaired_no_start), as a run that missed n of its wakeups reports them."""
    if doc["loss"].get("charged_to_keys"):
        return
    k = doc["histograms"][0]["key"]
    doc["loss"]["charged_to_keys"] = [{"pid": k["pid"], "tid": k["tid"],
                                       "start_ns": k["start_ns"], "lost": n}]
    doc["loss"]["lost_charged_to_keys"] = n
    for f in ("events", "unpaired_no_start", "unpaired", "lost", "lost_from_histograms"):
        doc["loss"][f] += n
    doc["bias"]["flag"] = True


def test_report_merges_by_addition():
    """Two runs merged equal the slot-by-slot sum; loss counters add; bias flag is the OR;
    the merged JSON is valid; another slot scheme is refused."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i in range(2):
            _, doc = traced(Workload("mix", CPU, 1, 1, 300), "--per-thread")
            charge_first_key(doc)
            paths.append(os.path.join(tmp, f"r{i}.json"))
            with open(paths[-1], "w") as f:
                json.dump(doc, f)
        docs = [json.load(open(p)) for p in paths]
        rc, out, err = report("-f", "json", *paths)
        check(rc == 0, err)
        merged = json.loads(out)
        validate(merged)
        want = {}
        for d in docs:
            for h in d["histograms"]:
                for s in h["slots"]:
                    k = (h["name"], h["key"]["tid"], s["lo_ns"])
                    want[k] = want.get(k, 0) + s["count"]
        got = {(h["name"], h["key"]["tid"], s["lo_ns"]): s["count"]
               for h in merged["histograms"] for s in h["slots"]}
        check(got == want, "merged slots differ from the sum")
        for k in ("events", "paired", "lost", "unpaired_no_start"):
            check(merged["loss"][k] == sum(d["loss"][k] for d in docs), f"loss {k}")
        check(merged["bias"]["flag"] == any(d["bias"]["flag"] for d in docs), "bias flag")
        # the losses charged to a key add by key, and each merged histogram of the key has them
        charges = {}
        for d in docs:
            for c in d["loss"].get("charged_to_keys", []):
                k = (c["tid"], c["start_ns"])
                charges[k] = charges.get(k, 0) + c["lost"]
        got = {(c["tid"], c["start_ns"]): c["lost"]
               for c in merged["loss"].get("charged_to_keys", [])}
        check(got == charges and merged["loss"].get("lost_charged_to_keys", 0) ==
              sum(charges.values()), f"merged charges {got} vs {charges}")
        for h in merged["histograms"]:
            k = (h["key"]["tid"], h["key"]["start_ns"])
            check(h["key_lost"] == charges.get(k, 0), f"merged {h['key']}: key_lost "
                  f"{h['key_lost']} vs {charges.get(k, 0)}")
        # another scheme
        rc, out, err = run("runq", "-f", "json", "-d", "0.2", "--precision", "2", "-o",
                           os.path.join(tmp, "p2.json"))
        check(rc == 0, err)
        rc, out, err = report(paths[0], os.path.join(tmp, "p2.json"))
        check(rc == 1 and "slot scheme differs" in err and len(err.splitlines()) == 1, err)
        # attach types: a tracepoint attached as another type is "mixed", and so is one
        # some inputs attached and others not (a kernel without block_rq_merge)
        bios = []
        for a in ("tp_btf", "raw_tp", "tp_btf"):
            bios.append(os.path.join(tmp, f"bio-{len(bios)}.json"))
            rc, _, err = run("bio", "-f", "json", "-d", "0.2", "--attach", a, "-o", bios[-1])
            check(rc == 0, err)
        rc, out, err = report("-f", "json", *bios[:2])
        check(rc == 0, err)
        attach = json.loads(out)["meta"]["attach"]
        check(set(attach.values()) == {"mixed"}, f"merged attach {attach}")
        with open(bios[2]) as f:
            d = json.load(f)
        check(d["meta"]["attach"].pop("block_rq_merge", None) == "tp_btf", d["meta"]["attach"])
        with open(bios[2], "w") as f:
            json.dump(d, f)
        rc, out, err = report("-f", "json", bios[0], bios[2])
        check(rc == 0, err)
        attach = json.loads(out)["meta"]["attach"]
        check(attach["block_rq_merge"] == "mixed" and attach["block_rq_issue"] == "tp_btf",
              f"merged attach {attach}")
        # good files of two tools: the line names the fix, not "give a file written by ..."
        rc, out, err = report(paths[0], bios[0])
        check(rc == 1 and "merge the runs of one tool" in err and "give a file" not in err and
              len(err.splitlines()) == 1, err)
        # bio grouped several ways ("process,disk,op") reads back and merges (it was
        # refused: a comma is not a letter)
        grouped = []
        for i in range(2):
            grouped.append(os.path.join(tmp, f"g{i}.json"))
            rc, _, err = run("bio", "-f", "json", "-d", "0.2", "--per-process", "--per-disk",
                             "--per-op", "-o", grouped[-1])
            check(rc == 0, err)
        rc, out, err = report("-f", "json", *grouped)
        check(rc == 0 and json.loads(out)["meta"]["grouping"] == "process,disk,op", err)


def test_report_reads_tracepoint_path_documents():
    """A document of the classic tracepoint path (lathist 0.1.0 had one; attach type
    "tracepoint", loss class unchecked_start) still reads and merges: its unchecked_start
    is shown and counts as a loss, as it did then; a live run never shows the class."""
    with tempfile.TemporaryDirectory() as tmp:
        rc, out, err = run("runq", "-f", "json", "-d", "0.2")
        check(rc == 0, err)
        doc = json.loads(out)
        check("unchecked_start" not in doc["loss"], f"live run: {sorted(doc['loss'])}")
        doc["loss"]["unchecked_start"] = 3
        doc["loss"]["events"] += 3		# a class counted at ends: each is an event
        path = os.path.join(tmp, "tp.json")
        with open(path, "w") as f:		# on tp_btf: no such class
            json.dump(doc, f)
        rc, out, err = report(path)
        check(rc == 1 and "unchecked_start is 3, a class of lathist 0.1.0's tracepoint" in err,
              f"unchecked_start on tp_btf: rc {rc}, {err!r}")
        doc["meta"]["attach"] = {k: "tracepoint" for k in doc["meta"]["attach"]}
        with open(path, "w") as f:
            json.dump(doc, f)
        rc, out, err = report("-f", "json", path)
        check(rc == 0, err)
        got = json.loads(out)
        validate(got)
        check(got["loss"]["unchecked_start"] == 3 and got["bias"]["flag"] and
              got["loss"]["lost"] == doc["loss"]["lost"] + 3 and
              set(got["meta"]["attach"].values()) == {"tracepoint"}, f"{got['loss']} {got['bias']}")
        rc, out, err = report(path)
        check(rc == 0 and "unchecked_start 3 (" in (paragraph(out, "lost ") or ""), out)
        rc, out, err = report("-v", path)
        check(rc == 0 and any(l.split()[:2] == ["unchecked_start", "3"] for l in out.splitlines()),
              out)


def test_report_refuses_double_counts_and_overwrites():
    """Two runs of one host at the same time with the same filters traced the same events:
    their merge is refused (with other filters it is a merge); an input given as - (a file
    on stdin) is never the -o or --heatmap file (it was overwritten, exit 0); --heatmap -
    is refused; a merge of runs with and without --oncpu says its oncpu histograms cover
    some of them."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = {n: os.path.join(tmp, f"{n}.json") for n in ("a", "b", "c", "d", "e")}
        same = [Lathist("runq", "-f", "json", "-o", paths[n], "-d", "0.5").start()
                for n in ("a", "b")]
        other = Lathist("runq", "-f", "json", "-o", paths["c"], "-d", "0.5", "--cpus", "0").start()
        for t in same + [other]:
            rc, _, err = t.wait()
            check(rc == 0, err)
        rc, out, err = report(paths["a"], paths["b"])
        check(rc == 1 and "at the same time with the same filters" in err and not out and
              len(err.strip().splitlines()) == 1, f"rc {rc}: {err!r}")
        rc, out, err = report(paths["a"], paths["c"])
        check(rc == 0, f"other filters: rc {rc}: {err!r}")
        before = open(paths["a"]).read()
        for args in (["-o", paths["a"], "-"], ["--heatmap", paths["a"], "-"]):
            with open(paths["a"]) as stdin:
                p = subprocess.run([LATHIST, "report", *args], stdin=stdin,
                                   capture_output=True, text=True)
            check(p.returncode == 2 and "input" in p.stderr and open(paths["a"]).read() == before,
                  f"{args}: rc {p.returncode}: {p.stderr!r}")
        rc, out, err = report("--heatmap", "-", paths["a"])
        check(rc == 2 and "--heatmap '-'" in err, f"--heatmap -: rc {rc}: {err!r}")
        for n, extra in (("d", ["--oncpu"]), ("e", [])):
            rc, _, err = run("runq", "-f", "json", "-o", paths[n], "-d", "0.2", *extra)
            check(rc == 0, err)
        rc, out, err = report(paths["d"], paths["e"])
        check(rc == 0 and "1 of the 2 inputs have on-CPU slices" in err, f"rc {rc}: {err!r}")


def test_report_refuses_bad_bio_histograms():
    """A bio histogram always has its bytes: the workload's own (5 reads of 4 KiB) come
    back through report, and one without the field is refused, one line, exit 1; before,
    it printed "bytes 0", exit 0. So is a disk name no kernel disk has (one with a quote
    and a newline was printed as it was, cutting the text's line)."""
    with LoopDevice() as dev, tempfile.TemporaryDirectory() as tmp:
        work = Workload("direct", dev.dev, 5, 4096, 0, 4096, exe=BIOWORK)
        pid = work.start()
        tool = Lathist("bio", "-f", "json", "--per-disk", "-p", str(pid)).start()
        work.go()
        work.wait()
        rc, out, err = tool.stop()
        check(rc == 0, err)
        doc = json.loads(out)
        good, bad = os.path.join(tmp, "good.json"), os.path.join(tmp, "bad.json")
        for name in ('a"b\n', "a b", ""):
            d = json.loads(out)
            d["histograms"][0]["key"]["disk"] = name
            with open(bad, "w") as f:
                json.dump(d, f)
            rc, text, err = report(bad)
            check(rc == 1 and not text and len(err.strip().splitlines()) == 1 and
                  "key field disk is not a disk name" in err, f"{name!r}: rc {rc}: {err!r}")
        with open(good, "w") as f:
            json.dump(doc, f)
        rc, out, err = report(good)
        check(rc == 0 and "bytes 20480" in out, f"rc {rc}: {err!r}")
        next(h for h in doc["histograms"] if h["name"] == "total").pop("bytes")
        with open(bad, "w") as f:
            json.dump(doc, f)
        rc, out, err = report(bad)
        check(rc == 1 and not out and len(err.strip().splitlines()) == 1 and
              "histogram total: bytes is missing" in err, f"rc {rc}: {err!r}")


def test_report_refuses_bad_files():
    """Malformed or hostile input: one line naming the file and the problem, exit 1."""
    _, good = traced(Workload("mix", CPU, 1, 0, 100), "--per-thread")
    text = json.dumps(good)

    def mutate(f):
        d = json.loads(text)
        f(d)
        return json.dumps(d)

    def charge(d, entries):
        """d's loss with these charges and 2 more missed waits to charge"""
        lo = d["loss"]
        for k in ("missed_wait", "lost", "lost_from_histograms"):
            lo[k] += 2
        lo.update(charged_to_keys=entries, lost_charged_to_keys=sum(e["lost"] for e in entries))

    cases = {
        "empty": "",
        "not JSON": "{\"schema\": ",
        "JSON null": "null",
        "JSON number": "42",
        "cut in a literal": '{"schema": tru',
        "array": "[1, 2]",
        "NUL": text[:10] + "\0" + text[10:],
        "schema": mutate(lambda d: d.update(schema="lathist/9")),
        "long schema": mutate(lambda d: d.update(schema="lathist/" + "9" * 40)),
        "negative": mutate(lambda d: d["histograms"][0].update(count=-1)),
        "huge": mutate(lambda d: d["histograms"][0]["slots"][0].update(count=2 ** 70)),
        # what a newcomer's hand edits got through (each printed a wrong value, exit 0)
        "negative filter pid": mutate(lambda d: d["meta"]["filters"].update(pid=-3)),
        "filter with a newline": mutate(lambda d: d["meta"]["filters"].update(
            cgroup="/x\nWARNING: fake")),
        "unknown filter": mutate(lambda d: d["meta"]["filters"].update(user="root")),
        "filters not an object": mutate(lambda d: d["meta"].update(filters=[])),
        "interval without -i": mutate(lambda d: d["meta"].update(interval_index=1,
                                                                   interval_ns=0)),
        "load average max below its ends": mutate(lambda d: d["meta"]["load"].update(
            loadavg_1m_start=d["meta"]["load"]["loadavg_1m_max"] + 1)),
        "paired below the histograms": mutate(lambda d: d["loss"].update(
            paired=d["loss"]["paired"] - 1, events=d["loss"]["events"])),
        "paired without histograms": mutate(lambda d: d.update(histograms=[])),
        "key without its tid": mutate(lambda d: d["histograms"][0]["key"].pop("tid")),
        "key of another grouping": mutate(lambda d: d["histograms"][0].update(key={"cpu": 0})),
        "unknown key field": mutate(lambda d: d["histograms"][0]["key"].update(foo=5)),
        "anonymized not a boolean": mutate(lambda d: d["meta"].update(anonymized="yes")),
        "string count": mutate(lambda d: d["histograms"][0].update(count="7")),
        "sum mismatch": mutate(lambda d: d["histograms"][0].update(
            count=d["histograms"][0]["count"] + 1)),
        "bad slot": mutate(lambda d: d["histograms"][0]["slots"][0].update(lo_ns=3000)),
        "precision": mutate(lambda d: d["meta"]["hist_scheme"].update(precision=9)),
        "tool": mutate(lambda d: d["meta"].update(tool="x" * 100)),
        "deep": "[" * 100000 + "]" * 100000,
        "key": mutate(lambda d: d["histograms"][0]["key"].update(tid=2 ** 40)),
        # the kernel gap per CPU: counts that add up to loss.missed_switch, one per CPU
        "gap not adding up": mutate(lambda d: d["loss"].update(
            missed_switch_per_cpu=[d["loss"]["missed_switch"] + 1] +
            [0] * (d["meta"]["ncpus"] - 1))),
        "gap on a CPU past ncpus": mutate(lambda d: d["loss"].update(
            missed_switch_per_cpu=[0] * d["meta"]["ncpus"] + [d["loss"]["missed_switch"]])),
        "gap not counts": mutate(lambda d: d["loss"].update(missed_switch_per_cpu="3")),
        "gap negative": mutate(lambda d: d["loss"].update(missed_switch_per_cpu=[-1, 0])),
        # losses charged to keys: entries that add up to loss.lost_charged_to_keys
        "charges not adding up": mutate(lambda d: d["loss"].update(
            charged_to_keys=[{"pid": 1, "tid": 1, "start_ns": 0, "lost": 1}],
            lost_charged_to_keys=2)),
        "charges without keys": mutate(lambda d: (d["loss"].update(lost_charged_to_keys=2),
                                                  d["loss"].pop("charged_to_keys", None))),
        "charge pid too big": mutate(lambda d: d["loss"].update(
            charged_to_keys=[{"pid": 2 ** 40, "tid": 1, "start_ns": 0, "lost": 1}],
            lost_charged_to_keys=1, unpaired_no_start=1)),
        # a per-thread key has a tid (a per-process one none), and nothing else
        "charge without tid": mutate(lambda d: d["loss"].update(
            charged_to_keys=[{"pid": 5, "start_ns": 0, "lost": 1}],
            lost_charged_to_keys=1, unpaired_no_start=1)),
        "charge extra field": mutate(lambda d: d["loss"].update(
            charged_to_keys=[{"pid": 5, "tid": 5, "start_ns": 0, "lost": 1, "x": 1}],
            lost_charged_to_keys=1, unpaired_no_start=1)),
        # one entry per key that lost waits (2 more missed waits: every other rule holds)
        "a key charged twice": mutate(lambda d: charge(
            d, [{"pid": 5, "tid": 5, "start_ns": 0, "lost": 1}] * 2)),
        "a charge of 0": mutate(lambda d: charge(
            d, [{"pid": 5, "tid": 5, "start_ns": 0, "lost": 0}])),
        "charge pid 0": mutate(lambda d: d["loss"].update(
            charged_to_keys=[{"pid": 0, "tid": 5, "start_ns": 0, "lost": 1}],
            lost_charged_to_keys=1, unpaired_no_start=1)),
        # only losses detected with their task known can be charged to a key
        "charges past the task losses": mutate(lambda d: d["loss"].update(
            charged_to_keys=[{"pid": 5, "tid": 5, "start_ns": 0, "lost": 7}],
            lost_charged_to_keys=7, unpaired_no_start=0, missed_switch_in=0,
            missed_wait=0, unchecked_start=0, negative_delta=0, absurd_delta=0,
            hist_map_full=0, hist_map_enomem=0, hist_map_error=0, prog_missed=7)),
        "gap without its CPUs": mutate(lambda d: (d["loss"].pop("missed_switch_per_cpu", None),
                                                  d["loss"].update(missed_switch=5))),
        # a sum the counted events cannot add up to (mean 0 next to a max)
        "sum below the slots": mutate(lambda d: d["histograms"][0].update(sum_ns=0)),
        "sum above count x max": mutate(lambda d: d["histograms"][0].update(
            sum_ns=d["histograms"][0]["count"] * d["histograms"][0]["max_ns"] + 1)),
        "grouping": mutate(lambda d: d["meta"].update(grouping="thread,cpu")),
        "no ncpus": mutate(lambda d: d["meta"].pop("ncpus")),
        "ncpus 0": mutate(lambda d: d["meta"].update(ncpus=0)),
        "bogus op": mutate(lambda d: d["histograms"][0]["key"].update(op="bogus")),
        # a max below its highest slot: named as such, not as a sum that does not fit it
        "max too low": mutate(lambda d: max(d["histograms"], key=lambda h: h["max_ns"]).update(
            max_ns=1)),
    }
    # what the message names: the schema found, the histogram's key
    first = json.loads(text)["histograms"][0]
    names = {"schema": '"schema" is "lathist/9", and this lathist reads lathist/1 only; read '
                       'it with the lathist that wrote it',
             "long schema": '"schema" is "lathist/' + "9" * 24 + '...", and this',
             "sum mismatch": f"histogram {first['name']}: slots add up to {first['count']}, "
                             f"count says {first['count'] + 1} (key tid {first['key']['tid']}, "
                             f"pid {first['key']['pid']}, "}
    # JSON, but not a document: said so (a literal at the end was "not JSON ... unexpected end")
    names["a key charged twice"] = ("loss.charged_to_keys names the key pid 5 tid 5 start_ns 0 "
                                    "twice: one entry per key")
    names["a charge of 0"] = "loss.charged_to_keys[0].lost is 0: an entry is a key that lost"
    names["JSON null"] = "a document is not a JSON object (null)"
    names["JSON number"] = "a document is not a JSON object"
    names["cut in a literal"] = "not JSON at byte 14 (json-c: unexpected end)"
    names["no ncpus"] = names["ncpus 0"] = "meta.ncpus is not a number of CPUs from 1 to"
    names["bogus op"] = 'key field op is "bogus", not an operation lathist writes'
    names["max too low"] = "max_ns 1 is not in its highest slot"
    # a CPU's key below meta.ncpus (the possible CPUs)
    rc, out, err = run("runq", "--per-cpu", "-f", "json", "-d", "0.2")
    check(rc == 0, err)
    per_cpu = json.loads(out)
    per_cpu["histograms"][0]["key"]["cpu"] = per_cpu["meta"]["ncpus"]
    cases["cpu past ncpus"] = json.dumps(per_cpu)
    names["cpu past ncpus"] = f"its key's cpu {per_cpu['meta']['ncpus']} is not below meta.ncpus"
    # a total (not per process/thread) document charges no key
    rc, out, err = run("runq", "-f", "json", "-d", "0.2")
    check(rc == 0, err)
    total = json.loads(out)
    total["loss"].update(charged_to_keys=[{"pid": 5, "start_ns": 0, "lost": 1}],
                         lost_charged_to_keys=1)
    total["loss"]["unpaired_no_start"] += 1
    total["loss"]["events"] += 1
    cases["charges in a total document"] = json.dumps(total)
    with tempfile.TemporaryDirectory() as tmp:
        for name, body in cases.items():
            path = os.path.join(tmp, name.replace(" ", "_") + ".json")
            with open(path, "w") as f:
                f.write(body)
            rc, out, err = report(path)
            check(rc == 1 and err.startswith(f"lathist report: {path}") and
                  len(err.strip().splitlines()) == 1 and not out and
                  names.get(name, "") in err, f"{name}: rc {rc}, stderr {err[:300]!r}")
        rc, out, err = report(os.path.join(tmp, "missing.json"))
        check(rc == 1 and "cannot read" in err, err)
        rc, out, err = report("")
        check(rc == 2 and "empty input name" in err, err)
        for args in (["--heatmap", "a.svg", "--heatmap", "b.svg"], ["--heatmap", ""]):
            rc, out, err = report(*args, os.path.join(tmp, "missing.json"))
            check(rc == 2 and len(err.strip().splitlines()) == 1, f"{args}: rc {rc}: {err!r}")
        good_path = os.path.join(tmp, "good.json")
        with open(good_path, "w") as f:
            f.write(text)
        rc, out, err = report("-o", good_path, good_path)
        check(rc == 2 and "is also an input" in err and open(good_path).read() == text, err)
        rc, out, err = report(good_path, good_path)
        check(rc == 2 and "is given twice" in err and not out, err)
        # --heatmap takes the next word: a saved run named there by mistake is kept
        saved = os.path.join(tmp, "saved.json")
        with open(saved, "w") as f:
            f.write(text)
        rc, out, err = report("--heatmap", saved, good_path)
        check(rc == 2 and "exists and is not an SVG" in err and open(saved).read() == text
              and not out, f"--heatmap over a JSON run: rc {rc} {err!r}")
        # a key string with a NUL in it is refused, not cut at the NUL
        d = json.loads(text)
        d["histograms"][0]["key"]["comm"] = "a\x00b"	# json.dumps writes \u0000
        nul = os.path.join(tmp, "nul.json")
        with open(nul, "w") as f:
            f.write(json.dumps(d))
        rc, out, err = report(nul)
        check(rc == 1 and "key field comm is not a task name" in err, f"NUL: {rc} {err!r}")
        rc, out, err = report("-f", "yaml", path)
        check(rc == 2 and "-f 'yaml'" in err, err)
        rc, out, err = report()
        check(rc == 2 and "no input" in err, err)


def test_report_reads_documents_across_chunks():
    """report reads its input 1 MiB at a time, keeping only the document being parsed: a
    document that spans chunks merges as the same one in one piece, an error past the
    first chunk names its byte in the file, and a NUL byte after it is still refused."""
    with tempfile.TemporaryDirectory() as tmp:
        series = os.path.join(tmp, "s.jsonl")
        rc, _, err = run("runq", "-d", "0.6", "-i", "0.2", "-f", "json", "--series", series)
        check(rc == 0, err)
        lines = open(series).read().splitlines()
        pad = " " * (3 << 20)

        def write(name, text):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            return path
        # whitespace inside the first document and between documents: 3 chunks each
        padded = write("padded.jsonl", "{" + pad + lines[0][1:] + "\n" + pad + "\n" +
                       "\n".join(lines[1:]) + "\n")
        a, b = report("-f", "json", series), report("-f", "json", padded)
        check(a[0] == 0 and b[0] == 0, f"{a[2]!r} {b[2]!r}")
        check(json.loads(a[1])["histograms"] == json.loads(b[1])["histograms"] and
              json.loads(a[1])["loss"] == json.loads(b[1])["loss"], "padded merge differs")
        bad = lines[0][:200] + "}"
        rc, _, plain = report(write("bad.json", bad))
        rc2, _, far = report(write("farbad.json", pad + bad))
        at = [int(re.search(r"not JSON at byte (\d+)", e).group(1)) for e in (plain, far)]
        check(rc == 1 and rc2 == 1 and at[1] == at[0] + len(pad), f"{plain!r} {far!r}")
        at_nul = len(lines[0]) + 1 + len(pad)
        rc, _, err = report(write("nul.jsonl", lines[0] + "\n" + pad + "\0\n"))
        check(rc == 1 and f"holds a NUL byte at byte {at_nul}" in err, f"rc {rc}: {err!r}")


def test_report_counts_each_interval_once():
    """Each document carries its run id, interval and span: report refuses the same
    interval twice (a copy, the same document twice in one file, a file and its copy on
    stdin, a repeated series line, overlapping series of one run, a merge with one of its
    inputs), one histogram twice in a document, paired above events, and a count past 2^64
    (quoting it). Runs of other hosts or times still merge. Before, all counted twice."""
    with tempfile.TemporaryDirectory() as tmp:
        series, last = os.path.join(tmp, "s.jsonl"), os.path.join(tmp, "last.json")
        rc, _, err = run("runq", "-d", "1", "-i", "0.2", "-f", "json", "-o", last,
                         "--series", series)
        check(rc == 0, err)
        lines = open(series).read().splitlines()
        docs = [json.loads(l) for l in lines]
        ids = {d["meta"]["run_id"] for d in docs}
        check(len(lines) >= 4 and len(ids) == 1 and len(ids.pop()) == 32 and
              [d["meta"]["interval_index"] for d in docs] == list(range(1, len(docs) + 1)) and
              all(d["meta"]["host"] == os.uname().nodename for d in docs), "ids and hosts")
        # with -i, -o's file holds the latest interval as the series has it: one line
        check(open(last).read() == lines[-1] + "\n", "-o's file is not the series' last line")
        one = os.path.join(tmp, "one.json")
        with open(one, "w") as f:
            f.write(lines[0] + "\n")

        def write(name, text):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            return path
        copy = write("copy.json", lines[0] + "\n")

        def edited(line, index=None, start=None, duration=None):
            d = json.loads(line)
            m = d["meta"]
            m["interval_index"] = m["interval_index"] if index is None else index
            m["start_realtime_ns"] = m["start_realtime_ns"] if start is None else start
            m["duration_ns"] = m["duration_ns"] if duration is None else duration
            return json.dumps(d)
        refused = {
            "a copy": [one, copy],
            "twice in one file": [write("twice.jsonl", lines[0] + "\n" + lines[0] + "\n")],
            "a repeated series line": [write("rep.jsonl", "\n".join(lines + [lines[2]]) + "\n")],
            "the last interval and the series": [series, last],
            "overlapping series": [write("head.jsonl", "\n".join(lines[:3]) + "\n"),
                                   write("tail.jsonl", "\n".join(lines[2:]) + "\n")],
            # the run's parts are indexed by start and by interval: neither may hide
            "a line spanning lines read before it": [write("span.jsonl", "\n".join(
                lines + [edited(lines[1], index=99, duration=docs[-1]["meta"]["start_realtime_ns"]
                                - docs[1]["meta"]["start_realtime_ns"])]) + "\n")],
            # an empty interval [s, s) read first shares its start with [s, e): the index
            # orders by start and end, so a third line inside [s, e) still meets [s, e)
            "a line inside an interval after an empty one at its start": [write(
                "empty.jsonl", "\n".join([
                    edited(lines[0], index=1, duration=0),
                    edited(lines[0], index=2, duration=10 ** 8),
                    edited(lines[0], index=3, start=docs[0]["meta"]["start_realtime_ns"] +
                           5 * 10 ** 7, duration=1000)]) + "\n")],
            "an interval again, at another time": [write("moved.jsonl", "\n".join(
                lines + [edited(lines[1], start=docs[-1]["meta"]["start_realtime_ns"] + 10 ** 12)])
                + "\n")],
        }
        for name, inputs in refused.items():
            rc, out, err = report(*inputs)
            check(rc == 1 and "it would be counted twice" in err and
                  len(err.strip().splitlines()) == 1 and not out, f"{name}: rc {rc}, {err!r}")
        # the same series read backwards (each part lands first in its index) merges the same
        fwd = report("-f", "json", series)
        back = report("-f", "json", write("back.jsonl", "\n".join(reversed(lines)) + "\n"))
        check(fwd[0] == 0 and back[0] == 0, f"{fwd[2]!r} {back[2]!r}")
        f, b = json.loads(fwd[1]), json.loads(back[1])
        check(f["histograms"] == b["histograms"] and f["loss"] == b["loss"] and
              sorted(p["interval_index"] for p in b["meta"]["parts"]) ==
              list(range(1, len(lines) + 1)), "forward and backward merges differ")
        rc, out, err = report(one, "-", stdin=lines[0] + "\n")
        check(rc == 1 and "standard input" in err and "counted twice" in err, f"stdin: {err!r}")
        rc, out, err = report("-", "-", stdin=lines[0] + "\n")
        check(rc == 2 and "given twice" in err, f"- -: {err!r}")
        # a merge lists what it covers; it merges with others, never with its own inputs
        rc, out, err = report("-f", "json", "-o", os.path.join(tmp, "m.json"), *[
            write(f"l{i}.json", l + "\n") for i, l in enumerate(lines[:2])])
        check(rc == 0, err)
        merged = json.load(open(os.path.join(tmp, "m.json")))
        validate(merged)
        check(merged["meta"]["run_id"] is None and
              [p["interval_index"] for p in merged["meta"]["parts"]] == [1, 2], "parts")
        rc, out, err = report(os.path.join(tmp, "m.json"), write("l2.json", lines[2] + "\n"))
        check(rc == 0, err)
        rc, out, err = report(os.path.join(tmp, "m.json"), series)
        check(rc == 1 and "interval 1 of run" in err, err)
        # another run (another time, or host) merges
        rc, _, err = run("runq", "-d", "0.2", "-f", "json", "-o", os.path.join(tmp, "b.json"))
        check(rc == 0, err)
        rc, out, err = report(series, os.path.join(tmp, "b.json"))
        check(rc == 0, err)
        # a copy with its run id taken out (or a merge listing nothing) is still a copy
        d = json.loads(lines[0])
        d["meta"]["run_id"] = None
        rc, out, err = report(one, write("noid.json", json.dumps(d)))
        check(rc == 1 and "cannot be told from a copy" in err, f"no run id: {err!r}")
        d = json.load(open(os.path.join(tmp, "m.json")))
        d["meta"]["parts"] = []
        rc, out, err = report(write("noparts.json", json.dumps(d)), one)
        check(rc == 1 and "meta.parts" in err, f"empty parts: {err!r}")
        rc, out, err = report("--heatmap", os.path.join(tmp, "h.svg"),
                              os.path.join(tmp, "m.json"), write("l3.json", lines[3] + "\n"))
        check(rc == 1 and "is a merge" in err, f"heatmap of a merge: {err!r}")
        d = json.loads(lines[0])
        d["loss"]["missed_wait"], d["loss"]["missed_switch_in"] = 2 ** 63, 2 ** 63
        rc, out, err = report(write("lostsum.json", json.dumps(d)))
        check(rc == 1 and "its loss classes add up past 2^64-1" in err and
              "merge fewer" not in err, f"lost sum: {err!r}")
        # each document's fits, their sum does not: that is what fewer documents mend
        d, d2 = json.loads(lines[0]), json.loads(lines[1])
        d["loss"]["missed_wait"] = d2["loss"]["missed_switch_in"] = 2 ** 63
        rc, out, err = report(write("lostsum2.jsonl", json.dumps(d) + "\n" + json.dumps(d2) + "\n"))
        check(rc == 1 and "the loss classes add up past 2^64-1; merge fewer documents" in err,
              f"lost sum of two: {err!r}")
        # within one document
        d = json.loads(lines[0])
        d["histograms"].append(d["histograms"][0])
        rc, out, err = report(write("dup.json", json.dumps(d)))
        check(rc == 1 and "appears twice in this document" in err, err)
        d = json.loads(lines[0])
        d["loss"]["paired"] = d["loss"]["events"] + 1
        rc, out, err = report(write("pe.json", json.dumps(d)))
        check(rc == 1 and "is more than loss.events" in err, err)
        # the classes counted at ends are each a share of events: they add up to it
        # (a wrong sum printed shares past 100%, exit 0)
        for cls, v in (("events", 10 ** 6), ("unpaired_no_start", 100),
                       ("unpaired_no_start", 2 ** 64 - 1)):
            d = json.loads(lines[0])
            d["loss"][cls] = v
            want = d["loss"]["events"]
            rc, out, err = report(write("ends.json", json.dumps(d)))
            # 2^64-1 with any other loss: past 2^64 in this document alone (not "merge fewer")
            check(rc == 1 and (f"and loss.events is {want}: each end is in one of them" in err
                               or (v == 2 ** 64 - 1 and "add up past 2^64-1" in err and
                                   "merge fewer" not in err)) and
                  len(err.strip().splitlines()) == 1, f"{cls} {v}: rc {rc}, {err!r}")
        d = json.loads(lines[0])
        d["loss"]["switches"] = 2 ** 64
        rc, out, err = report(write("big.json", json.dumps(d)))
        check(rc == 1 and '"switches": 18446744073709551616 is past 2^64-1' in err, err)
        d["loss"]["switches"] = 2 ** 64 - 1
        d2 = json.loads(lines[1])
        d2["loss"]["switches"] = 1
        rc, out, err = report(write("sum.jsonl", json.dumps(d) + "\n" + json.dumps(d2) + "\n"))
        check(rc == 1 and "loss.switches: the inputs add up past 2^64-1" in err, err)


def test_heatmap_orders_marks_and_refuses_overlap():
    """--heatmap: intervals given out of time order are drawn in order inside the frame;
    intervals that lost events are marked; two runs at once are refused (before, cells
    at x~1e22, and concurrent runs painted over each other)."""
    with tempfile.TemporaryDirectory() as tmp:
        s1, s2, svg = (os.path.join(tmp, n) for n in ("s1.jsonl", "s2.jsonl", "h.svg"))
        other = Lathist("runq", "-d", "1", "-i", "0.2", "--series", s2, "-f", "json",
                        "-o", os.path.join(tmp, "o2.json")).start()
        rc, _, err = run("runq", "-d", "1", "-i", "0.2", "--series", s1, "-f", "json",
                         "-o", os.path.join(tmp, "o1.json"))
        check(rc == 0, err)
        rc2, _, err2 = other.wait()
        check(rc2 == 0, err2)
        lines = open(s1).read().splitlines()
        docs = [json.loads(l) for l in lines]
        docs[1]["loss"]["unpaired_no_start"] += 5	# a loss to mark (ends: events too)
        docs[1]["loss"]["events"] += 5
        docs[1]["loss"]["lost"] += 5
        docs[1]["loss"]["lost_from_histograms"] += 5
        rev = os.path.join(tmp, "rev.jsonl")
        with open(rev, "w") as f:
            f.write("\n".join(json.dumps(d) for d in reversed(docs)) + "\n")
        rc, out, err = report("--heatmap", svg, rev)
        check(rc == 0, err)
        root = ET.parse(svg).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        frame = [r for r in root.iter(ns + "rect") if r.get("stroke") == "#333"][0]
        lo, hi = float(frame.get("x")), float(frame.get("x")) + float(frame.get("width"))
        cells = [r for r in root.iter(ns + "rect") if r.find(ns + "title") is not None]
        check(all(lo - 0.01 <= float(r.get("x")) and
                  float(r.get("x")) + float(r.get("width")) <= hi + 0.6 for r in cells),
              "a cell outside the frame")
        marks = [r for r in cells if "events lost" in r.find(ns + "title").text]
        check(len(marks) == sum(1 for d in docs if d["loss"]["lost"]) and
              any(m.find(ns + "title").text.startswith(f"{docs[1]['loss']['lost']} events")
                  for m in marks), f"{len(marks)} loss marks")
        xs = sorted({float(r.get("x")) for r in cells if r not in marks})
        check(len(xs) == len(docs), f"{len(xs)} columns for {len(docs)} intervals")
        os.unlink(svg)		# the two runs overlapped in time
        rc, out, err = report("--heatmap", svg, s1, s2)
        check(rc == 1 and "overlap in time" in err and not os.path.exists(svg), err)


def test_renamed_thread_is_one_key():
    """A thread that renames itself (PR_SET_NAME) mid-run is one key with one name, the
    first seen: in each document, across its histograms, and in a merge of the intervals
    (before, the merge split it in two keys, one per name)."""
    script = ("import ctypes, sys, time\n"
              "libc = ctypes.CDLL(None)\n"
              "libc.prctl(15, b'lh-before', 0, 0, 0)\n"
              "sys.stdin.readline()\n"
              "for n in range(400):\n"
              "    time.sleep(0.001)\n"
              "    if n == 200: libc.prctl(15, b'lh-after', 0, 0, 0)\n")
    with tempfile.TemporaryDirectory() as tmp:
        series = os.path.join(tmp, "s.jsonl")
        w = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)
        tool = Lathist("runq", "--per-thread", "-p", str(w.pid), "-i", "0.1", "-f", "json",
                       "-o", os.path.join(tmp, "last.json"), "--series", series).start()
        w.stdin.write(b"\n")
        w.stdin.flush()
        w.wait()
        rc, _, err = tool.stop()
        check(rc == 0, err)
        docs = [json.loads(l) for l in open(series)]
        names = set()
        for d in docs:
            per_task = {}
            for h in d["histograms"]:
                k = h["key"]
                per_task.setdefault((k["tid"], k["start_ns"]), set()).add(k["comm"])
            check(all(len(v) == 1 for v in per_task.values()), f"two names in one document: "
                  f"{per_task}")
            names |= {c for (tid, _), v in per_task.items() if tid == w.pid for c in v}
        check(names == {"lh-before", "lh-after"}, f"the intervals saw {names}")
        rc, out, err = report("-f", "json", series)
        check(rc == 0, err)
        keys = {(h["key"]["tid"], h["key"]["start_ns"], h["key"]["comm"])
                for h in json.loads(out)["histograms"] if h["key"]["tid"] == w.pid}
        check(len(keys) == 1 and keys.pop()[2] == "lh-before", f"merged keys {keys}")


def png_pixels(path):
    """Decompressed PNG image data (filter bytes included): enough to see variety."""
    data = open(path, "rb").read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    return zlib.decompress(idat)


def test_output_on_a_file_system_that_refuses_writes():
    """-o on hugetlbfs, whose files take no write(2) (EINVAL): the run says the file
    system refuses the write, exit 1 (it said the file was no longer a regular file);
    --series there is found when it is opened, before tracing (it was at the first write)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["mount", "-t", "hugetlbfs", "none", tmp], check=True)
        try:
            out, series = os.path.join(tmp, "o.json"), os.path.join(tmp, "s.jsonl")
            rc2, _, err2 = run("runq", "-f", "json", "-i", "0.2", "-d", "0.5", "--series",
                               series)
            rc, _, err = run("runq", "-f", "json", "-i", "0.2", "-d", "0.5", "-o", out)
        finally:
            subprocess.run(["umount", tmp], check=True)
    check(rc2 == 1 and "Tracing" not in err2 and f"cannot open --series {series}: Invalid "
          "argument" in err2, f"--series: rc {rc2}: {err2!r}")
    check(rc == 1 and f"cannot write {out}: Invalid argument (the file system there refuses "
          "the write; give a file on another one)" in err and "regular file" not in err,
          f"rc {rc}: {err!r}")


def test_series_truncated_before_tracing():
    """--series is created or truncated before tracing begins (it was opened at the first
    interval: a run killed before it left the last run's lines there as its own); an
    immutable one is refused with the fix before anything is loaded, exit 2 (it was found
    after tracing began), and so is an immutable -o file (found at the run's end)."""
    with tempfile.TemporaryDirectory() as tmp:
        series = os.path.join(tmp, "s.jsonl")
        with open(series, "w") as f:
            f.write('{"a line of another run": 1}\n')
        tool = Lathist("runq", "-f", "json", "-i", "30", "--series", series).start()
        size = os.path.getsize(series)
        tool.proc.kill()
        tool.proc.wait()
        check(size == 0, f"--series holds {size} bytes once tracing began, before any interval")
        with open(series, "w") as f:
            f.write("old\n")
        # an immutable file (EPERM even for root): refused before loading, with the fix
        if subprocess.run(["chattr", "+i", series], capture_output=True).returncode == 0:
            try:
                for opt in ("--series", "-o"):
                    rc, out, err = run("runq", "-f", "json", "-i", "0.2", "-d", "0.5", opt,
                                       series)
                    check(rc == 2 and "Tracing" not in err and
                          f"{opt} '{series}': is immutable or append-only (chattr +i or +a)"
                          in err and len(err.strip().splitlines()) == 1, f"rc {rc}: {err!r}")
            finally:
                subprocess.run(["chattr", "-i", series], check=True)
            check(open(series).read() == "old\n", "the immutable file changed")


def test_series_and_heatmap():
    """-i with --series keeps every interval; report --heatmap draws them: well-formed SVG
    with one column of cells per interval, rendered to PNG by rsvg-convert, not blank."""
    with tempfile.TemporaryDirectory() as tmp:
        series, svg, png = (os.path.join(tmp, n) for n in ("s.jsonl", "h.svg", "h.png"))
        work = Workload("mix", CPU, 1, 2, 1500)
        pid = work.start()
        tool = Lathist("runq", "-i", "0.25", "-f", "json", "-o", os.path.join(tmp, "last.json"),
                       "--series", series, "-p", str(pid)).start()
        work.go()
        work.wait()
        rc, _, err = tool.stop()
        check(rc == 0, err)
        lines = open(series).read().splitlines()
        check(len(lines) >= 4, f"{len(lines)} intervals in --series")
        for line in lines:
            validate(json.loads(line))
        rc, out, err = report("--heatmap", svg, series)
        check(rc == 0, err)
        root = ET.parse(svg).getroot()
        ns = "{http://www.w3.org/2000/svg}"
        cells = [r for r in root.iter(ns + "rect") if r.find(ns + "title") is not None]
        xs = {r.get("x") for r in cells}
        check(len(xs) == len(lines), f"{len(xs)} columns for {len(lines)} intervals")
        texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
        check("latency slot" in texts and "time since" in texts, f"axes: {texts[:200]}")
        p = subprocess.run(["rsvg-convert", svg, "-o", png], capture_output=True, text=True)
        check(p.returncode == 0, p.stderr)
        pixels = png_pixels(png)
        check(len(set(pixels)) > 20, f"PNG looks blank ({len(set(pixels))} byte values)")
        rc, out, err = report("--heatmap", svg, os.path.join(tmp, "last.json"))
        check(rc == 1 and "needs at least two documents" in err and not out, err)
        # a series with no event in the histogram drawn (a process asleep all through):
        # refused before anything is written (before, the text report came first)
        quiet, svg2 = os.path.join(tmp, "quiet.jsonl"), os.path.join(tmp, "q.svg")
        sleeper = subprocess.Popen(["sleep", "30"])
        try:
            rc, _, err = run("runq", "-i", "0.2", "-d", "0.7", "-f", "json", "-o",
                             os.path.join(tmp, "q.json"), "--series", quiet,
                             "-p", str(sleeper.pid))
        finally:
            sleeper.kill()
            sleeper.wait()
        check(rc == 0 and len(open(quiet).read().splitlines()) >= 2, err)
        rc, out, err = report("--heatmap", svg2, "--heatmap-hist", "preempt", quiet)
        check(rc == 1 and "no events in the preempt histogram" in err and out == "" and
              not os.path.exists(svg2), f"rc {rc}: {err!r}, stdout {out[:80]!r}")


def test_report_reader_fuzz():
    """The libFuzzer target of the report reader (ASan + UBSan), from the committed seeds,
    for FUZZ_SECONDS (30): no crash, leak or undefined behaviour."""
    seconds = os.environ.get("FUZZ_SECONDS", "30")
    with tempfile.TemporaryDirectory() as corpus:
        p = subprocess.run([os.path.join(ROOT, "build", "fuzz", "report_fuzz"),
                            f"-max_total_time={seconds}", "-rss_limit_mb=2048",
                            f"-artifact_prefix={corpus}/", corpus,
                            os.path.join(ROOT, "tests", "fuzz", "seeds")],
                           capture_output=True, text=True, errors="replace",
                           timeout=int(seconds) + 120)
        tail = "\n".join(l for l in p.stderr.splitlines()
                         if not l.startswith("lathist report"))[-2000:]
        check(p.returncode == 0 and "Done" in p.stderr, f"fuzzer rc {p.returncode}:\n{tail}")


def test_anonymize():
    """--anonymize: no real pid, tid or task name left in the report or the records; the
    same salt gives the same hashes (live and through report), another salt others; the
    counts are untouched."""
    env = dict(os.environ, LATHIST_ANON_SALT="test-salt-1-of-16-bytes")
    with tempfile.TemporaryDirectory() as tmp:
        events = os.path.join(tmp, "e.json")
        work = Workload("mix", CPU, 2, 0, 300)
        pid = work.start()
        p = subprocess.Popen([LATHIST, "runq", "-f", "json", "--per-thread", "-p", str(pid),
                              "--anonymize", "--slower-than", "0", "--events", events],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
        p.stderr.readline()	# Tracing ...
        work.go()
        rows = work.wait()
        p.send_signal(2)
        out, err = p.communicate(timeout=60)
        check(p.returncode == 0, err)
        tids = {r["tid"] for r in rows} | {pid}
        text = out + open(events).read()
        doc = json.loads(out)
        check(doc["meta"]["filters"]["pid"] != pid, f"filter {doc['meta']['filters']}")
        for h in doc["histograms"]:
            check(h["key"]["tid"] not in tids and h["key"]["pid"] != pid and
                  h["key"]["comm"].startswith("task-"), f"key {h['key']}")
        check("runqwork" not in text, "a real task name is left")
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        check(boot not in text and doc["meta"]["context"]["boot_id"].startswith("boot-"),
              "the real boot id is left")
        hashed = {h["key"]["pid"] for h in doc["histograms"]}
        check(hashed == {doc["meta"]["filters"]["pid"]}, f"pids {hashed}")
        # the same salt through report gives the same hash of the same pid
        saved = os.path.join(tmp, "plain.json")
        _, plain = traced(Workload("mix", CPU, 1, 0, 100), "--per-thread")
        charge_first_key(plain)
        with open(saved, "w") as f:
            json.dump(plain, f)
        rc, out, err = report("-f", "json", saved)
        check(rc == 0, err)
        plain = json.loads(out)
        outs = []
        for salt in ("test-salt-1-of-16-bytes", "test-salt-1-of-16-bytes", "test-salt-2-of-16-bytes"):
            q = subprocess.run([LATHIST, "report", "-f", "json", "--anonymize", saved],
                               capture_output=True, text=True,
                               env=dict(os.environ, LATHIST_ANON_SALT=salt))
            check(q.returncode == 0, q.stderr)
            outs.append(json.loads(q.stdout))
        keys = [sorted((h["key"]["tid"], h["key"]["comm"]) for h in o["histograms"])
                for o in outs]
        check(keys[0] == keys[1] and keys[0] != keys[2], "hashes not stable per salt")
        # an anonymized document is not hashed again (its ids would be hashes of hashes)
        again = os.path.join(tmp, "anon.json")
        with open(again, "w") as f:
            json.dump(outs[0], f)
        q = subprocess.run([LATHIST, "report", "--anonymize", again], capture_output=True,
                           text=True, env=dict(os.environ, LATHIST_ANON_SALT=salt))
        check(q.returncode == 2 and "anonymized already" in q.stderr and q.stdout == "" and
              len(q.stderr.splitlines()) == 1, f"rc {q.returncode}: {q.stderr!r}")
        # the -p filter is an id too: hashed like the keys' pid, never the real one
        real = plain["meta"]["filters"]["pid"]
        check(outs[0]["meta"]["filters"]["pid"] != real and
              {h["key"]["pid"] for h in outs[0]["histograms"]} ==
              {outs[0]["meta"]["filters"]["pid"]}, f"report filters {outs[0]['meta']['filters']}")
        check(sorted(h["count"] for h in outs[0]["histograms"]) ==
              sorted(h["count"] for h in plain["histograms"]), "counts changed")
        # losses charged to keys follow their keys: hashed alike, no real id left, and
        # every histogram keeps its own losses (so its bounds)
        real_ids = {h["key"]["tid"] for h in plain["histograms"]}
        anon_keys = {(h["key"]["pid"], h["key"]["tid"], h["key"]["start_ns"])
                     for h in outs[0]["histograms"]}
        for c in outs[0]["loss"]["charged_to_keys"]:
            check(c["tid"] not in real_ids and (c["pid"], c["tid"], c["start_ns"]) in anon_keys,
                  f"charge {c} is not on a hashed key")
        for f in ("key_lost", "lost"):
            check(sorted((h["count"], h[f]) for h in outs[0]["histograms"]) ==
                  sorted((h["count"], h[f]) for h in plain["histograms"]), f"{f} changed")
        # an anonymized document says so, and hides the host; one salt rule for both
        # sources: 16 to 64 bytes (before, LATHIST_ANON_SALT=x was taken)
        check(doc["meta"]["anonymized"] and doc["meta"]["host"].startswith("host-") and
              os.uname().nodename not in text, f"meta {doc['meta']['host']}")
        check(outs[0]["meta"]["anonymized"] and not plain["meta"]["anonymized"], "report meta")
        rc, out, err = report(saved, "-",
                              stdin=json.dumps(outs[0]))
        check(rc == 1 and "anonymized" in err, f"raw + anonymized merged: {err!r}")
        for salt in ("x", "15-bytes-salt..", "y" * 65):
            for args in (["runq", "-d", "0.2", "--anonymize"], ["report", "--anonymize", saved]):
                q = subprocess.run([LATHIST, *args], capture_output=True, text=True,
                                   env=dict(os.environ, LATHIST_ANON_SALT=salt))
                check(q.returncode == 2 and f"LATHIST_ANON_SALT is {len(salt)} byte{'' if len(salt) == 1 else 's'};" in
                      q.stderr and len(q.stderr.splitlines()) == 1 and not q.stdout,
                      f"{args} salt {salt!r}: rc {q.returncode}, {q.stderr!r}")
        q = subprocess.run([LATHIST, "runq", "-d", "0.2", "--anonymize"], capture_output=True,
                           text=True, env=env)
        check(q.returncode == 0 and "anonymized: pids, tids, task names, the host and its boot id" in
              q.stdout, q.stdout[:300])


def test_output_full_disk_said_once_and_again():
    """-o with -i on a file system that is full, then freed: one line when the writes start
    to fail (not one per interval), one when a report is written again, naming how many
    were not; exit 1; the file then holds a whole report."""
    def lines(path):
        try:
            with open(path) as f:
                return f.read().count("\n")
        except FileNotFoundError:
            return 0

    # 1 MiB: room for the old report and the new one beside it once fill is gone, however
    # many slots a loaded machine fills. The intervals are counted in --series (written
    # beside, on another file system): not guessed from the time.
    with tempfile.TemporaryDirectory() as tmp, full_tmpfs() as (small, fill):
        out, series = os.path.join(small, "r.json"), os.path.join(tmp, "s.json")
        tool = Lathist("runq", "-f", "json", "-i", "0.2", "-d", "4", "-o", out,
                       "--series", series).start()
        line = _readline(tool.proc.stderr, 30, "'cannot write'")
        tool.stderr_head += line
        deadline = time.monotonic() + 30
        while lines(series) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        failed = lines(series)		# at least these were not written
        os.unlink(fill)
        rc, _, err = tool.wait()
        total = lines(series)
        with open(out) as f:
            doc = json.load(f)
    fails = [l for l in err.splitlines() if "cannot write" in l]
    again = [l for l in err.splitlines() if "written again" in l]
    check(rc == 1 and len(fails) == 1 and "No space left on device" in fails[0] and
          len(again) == 1 and "could not be written to" not in err, f"rc {rc}: {err}")
    n = int(re.search(r"\((\d+) reports? w", again[0]).group(1))
    # the intervals before the freeing failed, and the file holds the last of the run
    check(failed >= 3 and failed <= n < total and doc["meta"]["interval_index"] == total,
          f"{n} reports not written, {failed} intervals before the freeing, {total} in all, "
          f"the file's interval {doc['meta']['interval_index']}: {again[0]}")
    # full to the end: the end says how many of the last reports are missing (all)
    with tempfile.TemporaryDirectory() as tmp, full_tmpfs() as (small, _):
        series = os.path.join(tmp, "s.json")
        rc, _, err = run("runq", "-f", "json", "-i", "0.2", "-d", "1", "-o",
                         os.path.join(small, "r.json"), "--series", series)
        total = lines(series)
    end = [l for l in err.splitlines() if "could not be written to" in l]
    check(rc == 1 and total > 1 and len(end) == 1 and f"the last {total} reports" in end[0] and
          len([l for l in err.splitlines() if "cannot write" in l]) == 1,
          f"rc {rc}, {total} intervals: {err}")
