#!/usr/bin/env python3
"""The script check's two figures (issue 31), timed as a user runs them and
against a peer in the same run: `tpujobs check` on a 10,010-line file (< 100
ms) and on a tree of 1,000 files (< 5 s), beside CPython parsing the same
files (`ast.parse`, `python3 -m py_compile`) and each program doing nothing
(process start-up).

The commands are run in rounds, each round in a new random order, so a
burst of load from other processes falls on all of them alike. Each run's
CPU time (user + system, from wait4) and wall time are kept; the report
gives the minimum and the median of each, the load average before and
after, and the ratio of tpujobs to the peer.

The 10,010-line file is dense (9.7 tokens a line, Python's tokenize); real
code is about half that (4-5 in typing.py, argparse.py, inspect.py,
_pydecimal.py), so the file is also timed beside `real.py`: those modules
of this Python's own standard library, concatenated (over 10,000 lines).
The tree is checked with `--jobs 1` and with the default (a thread per
hardware thread). `--busy-core` starts `yes > /dev/null` in a session of
its own (as another user's process) for the whole run, and stops it at
the end.

usage: compare.py TPUJOBS_BINARY CHECK_BENCH_BINARY [--rounds N] [--tree-rounds N] [--busy-core]
                  [--parts one,in-process,tree]
"""
import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def run(argv):
    """One run of argv: (cpu seconds, wall seconds); its output is discarded."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    errors = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if child.returncode not in (0, 2):  # 2: the check found errors, as it should here
        raise RuntimeError("%s exited %d: %s" % (argv, child.returncode, errors))
    return usage.ru_utime + usage.ru_stime, wall


def rounds(commands, count):
    """{name: [(cpu, wall), ...]} over `count` rounds in shuffled order."""
    times = {name: [] for name in commands}
    for _ in range(count):
        names = list(commands)
        random.shuffle(names)
        for name in names:
            times[name].append(run(commands[name]))
    return times


def summary(samples):
    cpu = [c for c, _ in samples]
    wall = [w for _, w in samples]
    return min(cpu), statistics.median(cpu), min(wall), statistics.median(wall)


def report(title, times, subject, peers, unit):
    scale = 1000.0 if unit == "ms" else 1.0
    print("\n%s (%d runs each)\n" % (title, len(times[subject])))
    print("| command | CPU min | CPU median | wall min | wall median | tpujobs CPU median / this |")
    print("|---|---|---|---|---|---|")
    subject_cpu = summary(times[subject])[1]
    for name in [subject] + peers:
        c_min, c_med, w_min, w_med = summary(times[name])
        print("| `%s` | %.1f %s | %.1f %s | %.1f %s | %.1f %s | %.2f |" %
              (name, c_min * scale, unit, c_med * scale, unit, w_min * scale, unit,
               w_med * scale, unit, subject_cpu / c_med))


# check_bench's in-process benchmarks of the 10,010-line file: the whole
# command, and its parts (tree-sitter alone; tree-sitter plus the conversion
# to lightning's syntax tree; the analysis and rule tables on a parsed tree).
IN_PROCESS = {
    "BM_CheckTenThousandLineFile": "run_check_command (check_bench)",
    "BM_TreeSitterParseOnly": "part: tree-sitter's parse alone (+ ts_tree_delete)",
    "BM_ParseTenThousandLineFile": "part: tree-sitter's parse + conversion to SyntaxTree",
    "BM_AnalyzeTenThousandLineFile": "part: check_script (analysis + rule tables)",
}


def in_process(check_bench, python, one, count):
    """CPU and wall per check inside one process, no start-up: check_bench's
    benchmarks (IN_PROCESS) against CPython's ast.parse in a loop,
    alternated `count` times. {name: [(cpu, wall)]} per repetition."""
    import json
    times = {name: [] for name in IN_PROCESS.values()}
    times["ast.parse (in one python3)"] = []
    loop = ("import ast,sys,time\ntext=open(sys.argv[1],'rb').read()\nast.parse(text)\n"
            "c,w=time.process_time(),time.perf_counter()\n"
            "for _ in range(10): ast.parse(text)\n"
            "print((time.process_time()-c)/10,(time.perf_counter()-w)/10)")
    for _ in range(count):
        out = subprocess.run([check_bench, "--benchmark_filter=" + "|".join(IN_PROCESS),
                              "--benchmark_min_time=1", "--benchmark_format=json"],
                             check=True, capture_output=True, text=True).stdout
        for bench in json.loads(out)["benchmarks"]:
            name = IN_PROCESS[bench["name"].split("/")[0]]
            times[name].append((bench["cpu_time"] / 1000.0, bench["real_time"] / 1000.0))
        cpu, wall = subprocess.run([python, "-c", loop, one], check=True, capture_output=True,
                                   text=True).stdout.split()
        times["ast.parse (in one python3)"].append((float(cpu), float(wall)))
    return times


# Standard-library modules of real, ordinary code (no `from __future__`,
# which would have to come first), concatenated until over 10,000 lines.
REAL_MODULES = ["typing.py", "argparse.py", "inspect.py", "dataclasses.py", "_pydecimal.py"]


def write_real_code(path):
    import sysconfig
    lines = 0
    with open(path, "wb") as out:
        for name in REAL_MODULES:
            if lines >= 10000:
                break
            text = open(os.path.join(sysconfig.get_paths()["stdlib"], name), "rb").read()
            out.write(text if text.endswith(b"\n") else text + b"\n")
            lines += text.count(b"\n")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tpujobs")
    parser.add_argument("check_bench")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--tree-rounds", type=int, default=7)
    parser.add_argument("--busy-core", action="store_true")
    parser.add_argument("--parts", default="one,in-process,tree",
                        help="which tables: one (the file, as processes), in-process, tree")
    args = parser.parse_args()
    parts = args.parts.split(",")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # so that `finally` stops `yes`
    busy = None
    if args.busy_core:
        busy = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL, start_new_session=True)
    python = sys.executable
    work = tempfile.mkdtemp(prefix="tpujobs-check-compare-")
    try:
        subprocess.run([args.check_bench, "--write-corpus", work], check=True)
        one = os.path.join(work, "train.py")
        tree = os.path.join(work, "tree")
        pyc = os.path.join(work, "train.pyc")
        check = [args.tpujobs, "check", "--format", "json", "--output", "/dev/null"]
        real = os.path.join(work, "real.py")
        real_lines = write_real_code(real)
        print("CPU: %s; Python %s (%s); load average before: %.2f %.2f %.2f%s" %
              (open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t"),
               sys.version.split()[0], python, *os.getloadavg(),
               "; `yes > /dev/null` keeps one core busy" if busy else ""))
        one_file = {
            "tpujobs check train.py": check + [one],
            "python3 ast.parse(train.py)":
                [python, "-c", "import ast,sys; ast.parse(open(sys.argv[1], 'rb').read())", one],
            "python3 py_compile train.py":
                [python, "-c", "import py_compile,sys; py_compile.compile(sys.argv[1], "
                 "cfile=sys.argv[2], doraise=True)", one, pyc],
            "tpujobs check real.py (%d lines of the stdlib)" % real_lines: check + [real],
            "python3 ast.parse(real.py)":
                [python, "-c", "import ast,sys; ast.parse(open(sys.argv[1], 'rb').read())", real],
            "tpujobs check --help (start-up)": [args.tpujobs, "check", "--help"],
            "python3 -c pass (start-up)": [python, "-c", "pass"],
        }
        if "one" in parts:
            times = rounds(one_file, args.rounds)
            report("One 10,010-line file (%d bytes)" % os.path.getsize(one), times,
                   "tpujobs check train.py",
                   [n for n in one_file if n != "tpujobs check train.py"], "ms")
            print("\nload average after: %.2f %.2f %.2f" % os.getloadavg())
        if "in-process" in parts:
            times = in_process(args.check_bench, python, one, max(3, args.rounds // 6))
            report("The same file inside one process (no start-up): each a mean over >= 1 s or "
                   "10 parses", times, "run_check_command (check_bench)",
                   [n for n in times if n != "run_check_command (check_bench)"], "ms")
            print("\nload average after: %.2f %.2f %.2f" % os.getloadavg())
        if "tree" not in parts:
            return
        tree_commands = {
            "tpujobs check tree/": check + [tree],
            "tpujobs check --jobs 1 tree/": check + ["--jobs", "1", tree],
            "python3 ast.parse of every tree/**.py":
                [python, "-c", "import ast,pathlib,sys\n"
                 "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.py')): ast.parse(p.read_bytes())",
                 tree],
        }
        times = rounds(tree_commands, args.tree_rounds)
        report("A tree of 1,000 files of 210 lines", times, "tpujobs check tree/",
               ["tpujobs check --jobs 1 tree/", "python3 ast.parse of every tree/**.py"], "s")
        print("\nload average after: %.2f %.2f %.2f" % os.getloadavg())
    finally:
        shutil.rmtree(work)
        if busy:
            busy.send_signal(signal.SIGTERM)
            busy.wait()


if __name__ == "__main__":
    main()
