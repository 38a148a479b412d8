#!/usr/bin/env python3
"""A standalone `tpujobs serve` with a very large queue (issue 29's budgets).

    bench/service/big_queue.py PATH/TO/tpujobs [--jobs 100000] [--cluster] [--same-session]

Starts its own service (embedded PostgreSQL, pool v3-32, fresh state dir) on
loopback; with --cluster instead a PostgreSQL server of its own with the
embedded one's settings, a replica (`serve --database-url URL --pool none`,
the scheduler leader) and an agent with the v3-32 pool. Each runs in a
session of its own, as under systemd or in a terminal of its own: with
Linux's autogroup a session is a scheduling group, and the service's
threads would otherwise share one with this script's submitters and wrk
(--same-session keeps them in this script's, as bench/RESULTS.md's figures
before its session 61 were taken).
Drains every host, then measures (in the replica, which serves the reads):
  1. status reads of queued jobs with 200 queued (wrk, 64 connections, 10 s,
     --read-runs times: the run of median rate is reported), with
     serve's CPU per request and the CPU PostgreSQL and all else spent then;
  2. the time to queue --jobs jobs (sweeps of 250 children, 4 submitters),
     how long after the last submit the newest job's pending reason shows,
     and the service's RSS per queued job (VmRSS before and after);
  3. the scheduler leader's passes over that queue, from /metrics
     (tpujobs_scheduler_pass_seconds): their mean over a quiet 30 s (and of
     each phase, with the plans reused and the reasons written then) and how
     many of them took over 25 and 50 ms (its histogram), and the longest
     since the start (which includes the burst of submits), and the
     longest of each phase of a pass (tpujobs_scheduler_pass_phase_max_seconds,
     and of housekeeping's steps: tpujobs_scheduler_housekeeping_max_seconds),
     the writes of pending reasons the leader makes off its passes
     (tpujobs_scheduler_reason_write*), and how many passes of the burst
     read nothing from PostgreSQL (tpujobs_scheduler_reads_skipped_total) or
     reused the last plan (tpujobs_scheduler_plans_reused_total), and the
     leader thread's CPU time in the passes, a mean and the longest pass's
     (tpujobs_scheduler_pass_cpu_seconds_total, _max_cpu_seconds), and the
     longest pass's own phases (tpujobs_scheduler_longest_pass_phase_seconds);
  4. status reads of queued jobs with the whole queue (same wrk run),
     alternating run by run with the same reads of a second service like
     the first, started then with 200 queued: the ratio of the two cancels
     the machine's drift between sets minutes apart;
  5. GET /v1/pool and GET /metrics with the whole queue (wrk, 8 connections,
     5 s), with PostgreSQL's CPU meanwhile;
  6. a priority-100 job: the time from the `:recover` request of one host
     to the job's STARTING event (the events' own timestamps).
PERF=DIR records `perf record -g` of serve during each read run into DIR.
--keep-logs DIR copies the logs (serve's, the agent's, PostgreSQL's) into DIR
at the end, to find why a pass took long.
Prints one line per figure. Nothing is tuned to a machine: every wait is on a
state, with a generous deadline.
"""
import argparse
import concurrent.futures
import datetime
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SPEC = {
    "name": "queued",
    "trainer": {"accelerator": "tpu", "devices": 1, "max_epochs": 1},
    "model": {"layers": [{"type": "linear", "out": 3}], "loss": "cross_entropy"},
    "data": {"dataset": "iris", "batch_size": 16},
    "optimizer": {"type": "sgd", "lr": 0.1},
}
HERE = os.path.dirname(os.path.abspath(__file__))
# db/embedded_postgres.cc's settings, for --cluster's own server.
EMBEDDED_SETTINGS = ["fsync=on", "synchronous_commit=on", "shared_buffers=128MB",
                     "max_connections=100", "max_wal_size=256MB", "min_wal_size=64MB"]


def call(url, method="GET", body=None, timeout=120):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        text = answer.read()
        kind = answer.headers.get("Content-Type", "")
        return json.loads(text) if "json" in kind else text.decode()


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def metric(text, series):
    """The value of one series (name and labels as written) in /metrics text; 0 if absent."""
    match = re.search(rf"^{re.escape(series)} (\S+)$", text, re.M)
    return float(match.group(1)) if match else 0.0


def pass_stats(url):
    text = call(url + "/metrics")
    return (metric(text, "tpujobs_scheduler_pass_seconds_count"),
            metric(text, "tpujobs_scheduler_pass_seconds_sum"),
            metric(text, "tpujobs_scheduler_pass_max_seconds"),
            metric(text, 'tpujobs_scheduler_pass_seconds_bucket{le="0.025"}'),
            metric(text, 'tpujobs_scheduler_pass_seconds_bucket{le="0.05"}'),
            metric(text, "tpujobs_scheduler_pass_cpu_seconds_total"),
            metric(text, "tpujobs_scheduler_pass_max_cpu_seconds"))


PHASES = ("housekeeping", "read", "plan", "write", "reasons")
STEPS = ("judge", "orphans", "sweep")  # housekeeping's


def reason_writes(url):
    """The leader's writes of pending reasons, off its passes: statements,
    reasons stored, their wall time summed (s) and the longest (s); all 0
    from a binary that writes them in its passes."""
    text = call(url + "/metrics")
    return [metric(text, "tpujobs_scheduler_" + name) for name in
            ("reason_writes_total", "reasons_written_total", "reason_write_seconds_total",
             "reason_write_max_seconds")]


def specs_learned(url):
    """New jobs' specs the leader learned: handed over by this process's API
    service, and parsed from their stored texts (both 0 from a binary that
    does not count them)."""
    text = call(url + "/metrics")
    return [metric(text, f'tpujobs_scheduler_specs_learned_total{{from="{kind}"}}')
            for kind in ("handed", "text")]


def pass_shortcuts(url):
    """Passes that read nothing from the database (only this process's
    submits since the last read) and passes that reused the last plan."""
    text = call(url + "/metrics")
    return [metric(text, "tpujobs_scheduler_" + name)
            for name in ("reads_skipped_total", "plans_reused_total")]


def describe_reason_writes(before, after):
    statements = after[0] - before[0]
    if not statements:
        return "none off the passes"
    return (f"{statements:.0f} statements of {(after[1] - before[1]) / statements:.0f} reasons, "
            f"mean {(after[2] - before[2]) / statements * 1000:.1f} ms, "
            f"longest since start {after[3] * 1000:.0f} ms")


def phases(url, series, label="phase", names=PHASES):
    """One value per phase of the leader's passes (or per step) of a per-phase series."""
    text = call(url + "/metrics")
    return [metric(text, f'{series}{{{label}="{name}"}}') for name in names]


def phase_maxima(url):
    """The longest of each phase of the leader's passes so far, and of each
    of housekeeping's steps, in ms."""
    longest = phases(url, "tpujobs_scheduler_pass_phase_max_seconds")
    steps = phases(url, "tpujobs_scheduler_housekeeping_max_seconds", "step", STEPS)
    return (", ".join(f"{phase} {value * 1000:.0f}" for phase, value in zip(PHASES, longest))
            + " (housekeeping's steps: "
            + ", ".join(f"{step} {value * 1000:.0f}" for step, value in zip(STEPS, steps)) + ")")


def longest_pass(url):
    """The longest pass's own phases (and housekeeping's steps) in ms, and
    whether it read the tables; "" from a binary that does not keep them."""
    text = call(url + "/metrics")
    if "tpujobs_scheduler_longest_pass_read_tables" not in text:
        return ""
    own = phases(url, "tpujobs_scheduler_longest_pass_phase_seconds")
    steps = phases(url, "tpujobs_scheduler_longest_pass_housekeeping_seconds", "step", STEPS)
    read = metric(text, "tpujobs_scheduler_longest_pass_read_tables")
    return ("; its phases (ms): "
            + ", ".join(f"{phase} {value * 1000:.1f}" for phase, value in zip(PHASES, own))
            + " (housekeeping's steps: "
            + ", ".join(f"{step} {value * 1000:.1f}" for step, value in zip(STEPS, steps))
            + ("), it read the tables" if read else "), it read nothing (this replica's submits)"))


def phase_totals(url):
    """Each phase's wall time summed over the leader's passes so far, in s."""
    return phases(url, "tpujobs_scheduler_pass_phase_seconds_total")


def step_totals(url):
    """Each of housekeeping's steps' wall time summed so far, in s."""
    return phases(url, "tpujobs_scheduler_housekeeping_seconds_total", "step", STEPS)


def phase_means(before, after, passes, names=PHASES):
    """Each phase's (or step's) mean per pass between two phase_totals, in ms."""
    return ", ".join(f"{phase} {(b - a) / passes * 1000:.1f}"
                     for phase, a, b in zip(names, before, after)) if passes else "none"


def cpu_by_pid(pids):
    """User + system CPU seconds of each of these processes (all their threads)."""
    seconds = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        seconds[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return seconds


def cpu_seconds(pids):
    return sum(cpu_by_pid(pids).values())


def cpu_spent(before, after):
    """CPU seconds spent between two cpu_by_pid: by the processes alive at the
    second, a process that came meanwhile all of its own (one that ended
    meanwhile is not counted)."""
    return sum(seconds - before.get(pid, 0) for pid, seconds in after.items())


def descendants(root):
    """root and every process below it."""
    children = {}
    for path in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(path) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(path.split("/")[2]))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def machine_busy_seconds():
    """CPU seconds every CPU spent on anything but idle and I/O wait."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def status_reads(url, first, last, serve_pid, postgres_pid, seconds=10):
    """wrk's rate and p99, and what the machine spent meanwhile: serve's CPU
    per request (which a busy neighbour does not change, unlike the rate),
    PostgreSQL's CPU seconds (queued views are read from memory: anything
    here is its background work, autovacuum or a checkpoint) and the CPU
    seconds of everything else."""
    env = dict(os.environ, FIRST_ID=str(first), LAST_ID=str(last))
    postgres = descendants(postgres_pid)
    views = view_sources(url)
    perf = None
    if os.environ.get("PERF"):  # a directory: `perf record -g` of serve during the run
        perf = subprocess.Popen(["perf", "record", "-g", "-F", "999", "-p", str(serve_pid), "-o",
                                 os.path.join(os.environ["PERF"], f"reads-{last}.data")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    postgres_before = cpu_by_pid(postgres)
    before = (cpu_seconds([serve_pid]), machine_busy_seconds())
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{seconds}s", "--latency", "-s",
                          os.path.join(HERE, "status.lua"), url],
                         env=env, capture_output=True, text=True, check=True).stdout
    if perf:
        perf.send_signal(2)
        perf.wait()
    postgres = descendants(postgres_pid)  # backends that came meanwhile, less those gone
    after = (cpu_seconds([serve_pid]), machine_busy_seconds())
    pg = cpu_spent(postgres_before, cpu_by_pid(postgres))
    rate = float(re.search(r"Requests/sec:\s+(\S+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    p99 = re.search(r"99%\s+(\S+)", out).group(1)
    serve, busy = (a - b for a, b in zip(after, before))
    memory, database = (a - b for a, b in zip(view_sources(url), views))
    return rate, (f"p99 {p99}, serve {serve / requests * 1e6:.1f} µs CPU/request, "
                  f"views {memory:.0f} from memory / {database:.0f} from the database, "
                  f"PostgreSQL {pg:.2f} CPU-s, all else {busy - serve - pg:.2f} CPU-s")


def path_reads(url, path, postgres_pid, connections=8, seconds=5):
    """wrk on one GET path: its rate, p50 and p99, and PostgreSQL's CPU
    seconds meanwhile (what each read costs the database)."""
    postgres = descendants(postgres_pid)
    postgres_before = cpu_by_pid(postgres)
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency",
                          url + path], capture_output=True, text=True, check=True).stdout
    pg = cpu_spent(postgres_before, cpu_by_pid(descendants(postgres_pid)))
    rate = float(re.search(r"Requests/sec:\s+(\S+)", out).group(1))
    p50 = re.search(r"50%\s+(\S+)", out).group(1)
    p99 = re.search(r"99%\s+(\S+)", out).group(1)
    return f"{rate:.0f} req/s, p50 {p50}, p99 {p99}, PostgreSQL {pg:.2f} CPU-s"


def median_of(results):
    """Of status_reads' results: the run of median rate, and every rate (a
    neighbour on a shared host moves one 10-s run by a third)."""
    results = sorted(results, key=lambda r: r[0])
    rate, cost = results[len(results) // 2]
    return rate, f"{cost}; runs {'/'.join(f'{r:.0f}' for r, _ in results)} req/s"


def median_reads(url, first, last, serve_pid, postgres_pid, runs):
    """status_reads `runs` times in a row, as median_of gives them."""
    return median_of([status_reads(url, first, last, serve_pid, postgres_pid)
                      for _ in range(runs)])


def view_sources(url):
    """tpujobs_job_views_total: (from memory, from the database)."""
    text = call(url + "/metrics")
    return tuple(metric(text, f'tpujobs_job_views_total{{from="{source}"}}')
                 for source in ("memory", "database"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_line(process, log_path, text, seconds=120):
    deadline = time.time() + seconds
    while text not in open(log_path).read():
        if process.poll() is not None or time.time() > deadline:
            sys.exit(f"no '{text}' in {log_path}:\n" + open(log_path).read())
        time.sleep(0.1)


def start_postgres(state, processes, own_session):
    """A PostgreSQL server with the embedded settings; its URL."""
    bin_dir = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
    data = os.path.join(state, "pg")
    os.makedirs(data)
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_postgres:
        shutil.chown(data, "postgres")
    subprocess.run(as_postgres + [f"{bin_dir}/initdb", "-D", data, "-U", "tpujobs",
                                  "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True)
    port = free_port()
    log_path = os.path.join(state, "postgres.log")
    args = [f"{bin_dir}/postgres", "-D", data, "-k", data, "-p", str(port),
            "-c", "listen_addresses=127.0.0.1"]
    for setting in EMBEDDED_SETTINGS:
        args += ["-c", setting]
    processes.append(subprocess.Popen(as_postgres + args, start_new_session=own_session,
                                      stdout=open(log_path, "w"),
                                      stderr=subprocess.STDOUT))
    wait_for_line(processes[-1], log_path, "ready to accept connections")
    subprocess.run(as_postgres + [f"{bin_dir}/createdb", "-h", "127.0.0.1", "-p", str(port),
                                  "-U", "tpujobs", "tpujobs"], check=True)
    return f"postgresql://tpujobs@127.0.0.1:{port}/tpujobs"


def start_service(binary, state, jobs, cluster, processes, own_session):
    """Starts the service; its URL, the pid that serves the reads and its
    PostgreSQL's postmaster (the embedded one, or --cluster's own, under
    runuser as root). `own_session`: the service (and --cluster's
    PostgreSQL and agent) each in a session of its own, as under systemd or
    in a terminal of its own, rather than in this script's; with Linux's
    autogroup a session is a scheduling group, and in this script's the
    service's threads would share one with the submitters and wrk."""
    first = len(processes)
    port = free_port()
    common = ["--listen", f"127.0.0.1:{port}", "--state-dir", os.path.join(state, "state"),
              "--default-max-queued", str(jobs + 1000)]
    if not cluster:
        args = [binary, "serve", "--pool", "v3-32"]
    else:
        database = start_postgres(state, processes, own_session)
        args = [binary, "serve", "--database-url", database, "--name", "replica", "--pool", "none"]
    log_path = os.path.join(state, "serve.log")
    processes.append(subprocess.Popen(args + common, start_new_session=own_session,
                                      stdout=open(log_path, "w"), stderr=subprocess.STDOUT))
    serve = processes[-1]
    wait_for_line(serve, log_path, "tpujobs listening on")
    if cluster:
        agent_log = os.path.join(state, "agent.log")
        processes.append(subprocess.Popen(
            [binary, "agent", "--database-url", database, "--pool", "v3-32", "--name", "agent"],
            start_new_session=own_session, stdout=open(agent_log, "w"),
            stderr=subprocess.STDOUT))
        wait_for_line(processes[-1], agent_log, "running")
        deadline = time.time() + 60
        while not call(f"http://127.0.0.1:{port}/v1/pool")["hosts"]:
            if time.time() > deadline:
                sys.exit("the agent's hosts never showed in the pool")
            time.sleep(0.1)
    postgres_pid = (processes[first].pid if cluster else
                    int(open(os.path.join(state, "state", "pgdata", "postmaster.pid")).readline()))
    return f"http://127.0.0.1:{port}", serve.pid, postgres_pid


def drain(url):
    """Drains every host of the pool; their names."""
    hosts = [h["name"] for h in call(url + "/v1/pool")["hosts"]]
    for host in hosts:
        call(f"{url}/v1/pool/hosts/{host}:drain", "POST", {})
    return hosts


def submit_sweep(url, size, offset):
    spec = dict(SPEC, sweep={"trainer.seed": list(range(offset, offset + size))})
    answer = call(url + "/v1/jobs", "POST", spec)
    return [job["id"] for job in answer["jobs"]]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--jobs", type=int, default=100000)
    parser.add_argument("--read-runs", type=int, default=3,
                        help="wrk runs of each read figure; the median is reported")
    parser.add_argument("--same-session", action="store_true",
                        help="run the service in this script's session (and so, with Linux's "
                             "autogroup, in the load generators' scheduling group), as the "
                             "figures in bench/RESULTS.md before its session 61 were taken")
    parser.add_argument("--cluster", action="store_true",
                        help="a replica with an agent on a PostgreSQL server of its own")
    parser.add_argument("--keep-logs", metavar="DIR",
                        help="copy every log of the run into DIR at the end")
    args = parser.parse_args()

    state = tempfile.mkdtemp(prefix="tpujobs-bigq.")
    os.chmod(state, 0o755)
    processes = []
    try:
        url, serve_pid, postgres_pid = start_service(args.binary, state, args.jobs, args.cluster,
                                                     processes, not args.same_session)
        cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo"],
                             capture_output=True, text=True).stdout.strip()
        print(f"machine: {cpu}, {os.cpu_count()} CPUs, load average {os.getloadavg()}; "
              "the service in " + ("this script's session" if args.same_session
                                   else "a session of its own"))
        idle = rss_mb(serve_pid)
        print(f"RSS idle: {idle:.1f} MB")
        hosts = drain(url)

        small = submit_sweep(url, 200, 0)
        rate_small, cost = median_reads(url, small[0], small[-1], serve_pid, postgres_pid,
                                        args.read_runs)
        print(f"status reads, 200 queued: {rate_small:.0f} req/s, {cost}")

        began = time.time()
        burst_before = pass_stats(url)
        phases_before = phase_totals(url)
        writes_before = reason_writes(url)
        specs_before = specs_learned(url)
        shortcuts_before = pass_shortcuts(url)
        sizes = [250] * ((args.jobs - 200) // 250)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            ids = [i for part in pool.map(lambda k: submit_sweep(url, 250, 1000 + 250 * k),
                                          range(len(sizes))) for i in part]
        took = time.time() - began
        queued = 200 + len(ids)
        # Every job's reason is written once it is judged: how long the
        # newest one took to show, from the end of its sweep's submit.
        newest, shown_after = max(ids), None
        while shown_after is None and time.time() < began + took + 60:
            if call(f"{url}/v1/jobs/{newest}").get("pending_reason") is not None:
                shown_after = time.time() - (began + took)
            else:
                time.sleep(0.002)
        print(f"queued {queued} jobs in {took:.1f} s ({queued / took:.0f} jobs/s); "
              f"the newest job's pending reason shown "
              + (f"{shown_after * 1000:.0f} ms after the last submit" if shown_after is not None
                 else "not within 60 s"))
        burst = pass_stats(url)
        passes = burst[0] - burst_before[0]
        print(f"leader passes during the submits: {passes:.0f}, "
              f"{passes - (burst[3] - burst_before[3]):.0f} over 25 ms, "
              f"{passes - (burst[4] - burst_before[4]):.0f} over 50 ms, "
              f"longest {burst[2] * 1000:.0f} ms ({burst[6] * 1000:.0f} on the leader thread's "
              f"CPU{longest_pass(url)}); the leader thread's CPU a pass: mean "
              f"{(burst[5] - burst_before[5]) / passes * 1000 if passes else 0:.1f} ms; "
              "reads skipped / plans reused: "
              + " / ".join(f"{a - b:.0f}" for a, b in zip(pass_shortcuts(url), shortcuts_before))
              + "; mean phases (ms): "
              f"{phase_means(phases_before, phase_totals(url), passes)}; "
              f"longest phases since start (ms): {phase_maxima(url)}; "
              f"reason writes: {describe_reason_writes(writes_before, reason_writes(url))}; "
              "specs learned handed over / parsed: "
              + " / ".join(f"{a - b:.0f}" for a, b in zip(specs_learned(url), specs_before)))

        # Quiet: the leader's passes over the whole queue, woken by nothing
        # but its poll interval.
        time.sleep(5)
        before = pass_stats(url)
        quiet_phases, quiet_shortcuts = phase_totals(url), pass_shortcuts(url)
        quiet_steps = step_totals(url)
        quiet_writes = reason_writes(url)
        time.sleep(30)
        after = pass_stats(url)
        passes = after[0] - before[0]
        mean_ms = (after[1] - before[1]) / passes * 1000 if passes else float("nan")
        over_25 = passes - (after[3] - before[3])
        over_50 = passes - (after[4] - before[4])
        print(f"leader passes over {queued} queued, quiet 30 s: {passes:.0f} passes, "
              f"mean {mean_ms:.1f} ms "
              f"({(after[5] - before[5]) / passes * 1000 if passes else 0:.1f} on the leader "
              f"thread's CPU), {over_25:.0f} over 25 ms, {over_50:.0f} over 50 ms; "
              f"longest since start {after[2] * 1000:.1f} ms; mean phases (ms): "
              f"{phase_means(quiet_phases, phase_totals(url), passes)} (housekeeping's steps: "
              f"{phase_means(quiet_steps, step_totals(url), passes, STEPS)}); reads skipped / plans "
              "reused: "
              + " / ".join(f"{a - b:.0f}" for a, b in zip(pass_shortcuts(url), quiet_shortcuts))
              + f"; reason writes: {describe_reason_writes(quiet_writes, reason_writes(url))}")
        full = rss_mb(serve_pid)
        print(f"RSS with {queued} queued: {full:.1f} MB "
              f"({(full - idle) * 1024 * 1024 / queued:.0f} bytes per queued job)")

        # Beside it, a second service like the first with 200 queued: its
        # read runs and the big queue's alternate, so that the machine's
        # drift between sets minutes apart falls on both figures alike.
        beside_state = os.path.join(state, "beside")
        os.makedirs(beside_state)
        beside_url, beside_pid, beside_postgres = start_service(args.binary, beside_state, 200,
                                                                args.cluster, processes,
                                                                not args.same_session)
        drain(beside_url)
        beside = submit_sweep(beside_url, 200, 0)
        big_runs, beside_runs = [], []
        measures = (lambda: big_runs.append(status_reads(url, small[0], max(ids), serve_pid,
                                                         postgres_pid)),
                    lambda: beside_runs.append(status_reads(beside_url, beside[0], beside[-1],
                                                            beside_pid, beside_postgres)))
        for run in range(args.read_runs):  # big first, then the other first, ...
            for measure in (measures if run % 2 == 0 else measures[::-1]):
                measure()
        rate_big, cost = median_of(big_runs)
        rate_beside, beside_cost = median_of(beside_runs)
        print(f"status reads, {queued} queued: {rate_big:.0f} req/s, {cost} "
              f"({rate_big / rate_small:.2f}x the 200-queued figure)")
        print(f"status reads, 200 queued in a second service, runs alternating with the "
              f"above: {rate_beside:.0f} req/s, {beside_cost}; the big queue's median "
              f"{rate_big / rate_beside:.2f}x this one's, run by run "
              + "/".join(f"{b[0] / s[0]:.2f}" for b, s in zip(big_runs, beside_runs)))

        # The pool's view, which every open web page polls (each second on
        # the Pool page, every two in the header), and a Prometheus scrape.
        for path in ("/v1/pool", "/metrics"):
            print(f"GET {path} with {queued} queued, wrk 8 connections 5 s: "
                  f"{path_reads(url, path, postgres_pid)}")

        urgent = call(url + "/v1/jobs", "POST", dict(SPEC, name="urgent", priority=100))["id"]
        deadline = time.time() + 30
        while call(f"{url}/v1/jobs/{urgent}").get("pending_reason") is None:
            if time.time() > deadline:
                sys.exit("the urgent job was never judged")
            time.sleep(0.05)
        recovered = datetime.datetime.now(datetime.timezone.utc)
        call(f"{url}/v1/pool/hosts/{hosts[0]}:recover", "POST", {})
        deadline = time.time() + 60
        while True:
            events = call(f"{url}/v1/jobs/{urgent}/events")
            starting = [e for e in events["events"] if e.get("to") == "STARTING"]
            if starting:
                break
            if time.time() > deadline:
                sys.exit("the urgent job was not placed within 60 s")
            time.sleep(0.05)
        at = datetime.datetime.fromisoformat(starting[0]["at"].replace("Z", "+00:00"))
        print(f"priority-100 job placed {(at - recovered).total_seconds() * 1000:.0f} ms "
              f"after the recover request")
        final = pass_stats(url)
        print(f"longest pass since start {final[2] * 1000:.0f} ms ({final[6] * 1000:.0f} on the "
              f"leader thread's CPU{longest_pass(url)}); "
              f"longest phases since start (ms): {phase_maxima(url)}")
    finally:
        for process in reversed(processes):  # the agent, the replica, then PostgreSQL
            process.terminate()
            process.wait(timeout=120)
        if args.keep_logs:
            os.makedirs(args.keep_logs, exist_ok=True)
            for log in glob.glob(os.path.join(state, "**", "*.log"), recursive=True):
                name = os.path.relpath(log, state).replace(os.sep, "-")
                shutil.copy(log, os.path.join(args.keep_logs, name))
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
