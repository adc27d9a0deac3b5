#!/usr/bin/env python3
"""Runs every lathist test: cmocka unit tests, then integration tests that load real
BPF programs (root needed). Ends with one line: 'N passed, N failed'.

  python3 tests/run.py [-k SUBSTRING]
"""
import glob
import importlib
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "integration"))


def unit_tests(selected):
    """Each cmocka binary with TAP output: one result per test case."""
    results = []
    for exe in sorted(glob.glob(os.path.join(ROOT, "build", "tests", "test_*"))):
        env = dict(os.environ, CMOCKA_MESSAGE_OUTPUT="TAP")
        p = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=300)
        name = os.path.basename(exe)
        cases = 0
        for line in p.stdout.splitlines():
            if line.startswith("ok ") or line.startswith("not ok "):
                cases += 1
                ok = line.startswith("ok ")
                results.append((f"{name}: {line.split(' - ', 1)[-1]}", ok, "" if ok else p.stdout))
        if p.returncode and not any(not ok for _, ok, _ in results[-cases:] if cases):
            results.append((name, False, f"exit {p.returncode}\n{p.stdout}{p.stderr}"))
        if not cases and not p.returncode:
            results.append((name, False, "no test case ran"))
    return [r for r in results if not selected or selected in r[0]]


def integration_tests(selected):
    import lh
    results = []
    for path in sorted(glob.glob(os.path.join(HERE, "integration", "test_*.py"))):
        mod = importlib.import_module(os.path.basename(path)[:-3])
        for name in [n for n in dir(mod) if n.startswith("test_")]:
            full = f"{mod.__name__}.{name}"
            if selected and selected not in full:
                continue
            t0 = time.monotonic()
            try:
                getattr(mod, name)()
                results.append((full, True, f"{time.monotonic() - t0:.1f}s"))
            except Exception:
                results.append((full, False, traceback.format_exc()))
            finally:
                lh.cleanup()
            ok = results[-1][1]
            print(f"{'ok  ' if ok else 'FAIL'} {full} ({time.monotonic() - t0:.1f}s)", flush=True)
            if not ok:
                print(results[-1][2], flush=True)
    return results


def main():
    selected = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "-k" else None
    results = unit_tests(selected)
    for name, ok, detail in results:
        print(f"{'ok  ' if ok else 'FAIL'} {name}", flush=True)
        if not ok:
            print(detail)
    if os.geteuid() != 0:
        print("integration tests need root (they load BPF programs)")
        results.append(("integration (root)", False, "not root"))
    else:
        results += integration_tests(selected)
    passed = sum(1 for r in results if r[1])
    failed = len(results) - passed
    if failed:
        print("failed:", ", ".join(r[0] for r in results if not r[1]))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
