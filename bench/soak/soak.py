#!/usr/bin/env python3
"""Issue 34's soak: minutes of mixed load on one `tpujobs serve` (embedded
PostgreSQL in a temporary state directory, a v3-8 pool).

  - A flooding tenant at its limits (set with POST /v1/tenants/flood/limits):
    submitters past max_queued and the submit rate, readers of
    GET /v1/jobs?limit=500, and log followers that never read (past the
    per-tenant follower cap) on a job that logs every step.
  - A normal tenant submits a small job, reads it, lists its jobs and follows
    the job's log to its end, in a loop. Its jobs finish.
  - At 40% of the run the embedded PostgreSQL's postmaster is killed (serve
    starts it again); at 70% serve itself is killed (SIGKILL) and started
    again on the same state directory and port.

It reports the normal tenant's latencies (p50/p99 of submit, get, list) in an
idle baseline (the normal tenant alone, before the flood) and under the
flood (and under the flood without the requests that met a restart: "flood*"),
serve's RSS over time, and every job answered 201 against the jobs in
PostgreSQL at the end.

usage: soak.py /path/to/tpujobs [minutes] [baseline_seconds]

SOAK_CLUSTER=1: the same against a cluster instead: a PostgreSQL this script
runs (as the user postgres, initdb + postgres, restarted by the script after
its SIGKILL as a supervisor would), two API replicas (`serve --database-url
URL --name r1|r2 --pool none`) and one agent (`tpujobs agent --pool v3-8`,
which runs the jobs). The flood goes to both replicas, the normal tenant to
r2; at 70% replica r1 is SIGKILLed and started again. RSS is sampled for r1,
r2 and the agent.
"""
import json, multiprocessing, os, signal, socket, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request

BINARY = sys.argv[1]
MINUTES = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
BASELINE = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
STATE = tempfile.mkdtemp(prefix="tpujobs-soak-")
LIMITS = {"max_queued": 50, "submits_per_second": 5, "submit_burst": 10,
          "requests_per_second": 100, "request_burst": 200, "max_array_size": 16}

lock = threading.Lock()
stop = threading.Event()
flooding = threading.Event()
accepted = {"normal": set(), "flood": set()}  # ids answered 201
statuses = {"normal": {}, "flood": {}}        # status -> count
latency = {}                                  # (phase, op) -> [(began, seconds, status)]
faults = []                                   # (from, to): a restart, kill to ready again
phase = ["baseline"]
events = []
serves = []  # every serve process started, stopped at the end whatever happens


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CLUSTER = os.environ.get("SOAK_CLUSTER") == "1"
PORTS = [free_port(), free_port()] if CLUSTER else [free_port()]
PORT = PORTS[0]
PG_DIR = os.path.join(STATE, "pg")  # cluster mode: the script's own PostgreSQL
DATABASE_URL = f"postgresql://tpujobs@/tpujobs?host={PG_DIR}&port=5432"
postgres = [None]  # cluster mode: the running postmaster (Popen)


def note(text):
    line = f"{time.strftime('%H:%M:%S')} {text}"
    events.append(line)
    print(line, flush=True)


def count(tenant, status):
    with lock:
        statuses[tenant][status] = statuses[tenant].get(status, 0) + 1


def call(token, method, path, body=None, timeout=30, port=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port or PORT}" + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except Exception:  # refused, reset, timed out: the service was down
        return 0, b""


def timed(op, token, method, path, body=None, port=None):
    begin = time.monotonic()
    status, payload = call(token, method, path, body, port=port)
    with lock:
        latency.setdefault((phase[0], op), []).append((begin, time.monotonic() - begin, status))
    return status, payload


def small_job(name):
    return {"name": name, "trainer": {"accelerator": "tpu", "devices": 1, "max_epochs": 1,
                                      "log_every_n_steps": 5},
            "model": {"layers": [{"type": "linear", "out": 32}, {"type": "relu"},
                                 {"type": "linear", "out": 10}], "loss": "cross_entropy"},
            "data": {"dataset": "digits", "batch_size": 64}, "timeout": "5m"}


def normal_tenant(token):
    n = 0
    port = PORTS[-1]  # cluster mode: r2, the replica not restarted
    while not stop.is_set():
        n += 1
        status, payload = timed("submit", token, "POST", "/v1/jobs", small_job(f"normal-{n}"), port=port)
        count("normal", status)
        if status == 201:
            job = json.loads(payload)["id"]
            with lock:
                accepted["normal"].add(job)
            timed("get", token, "GET", f"/v1/jobs/{job}", port=port)
            timed("list", token, "GET", "/v1/jobs?limit=20", port=port)
            follow(token, job, read=True, seconds=20, port=port)
        else:
            time.sleep(1)
        time.sleep(0.5)


def follow(token, job, read, seconds, port=None):
    """Follows the job's log; a follower that does not read holds the socket."""
    try:
        s = socket.create_connection(("127.0.0.1", port or PORT), timeout=10)
    except OSError:
        return None
    s.sendall((f"GET /v1/jobs/{job}/logs?follow=true HTTP/1.1\r\nHost: x\r\n"
               f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n").encode())
    if not read:
        return s
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end and not stop.is_set():
            if not s.recv(65536):
                break
    except OSError:
        pass
    s.close()
    return None


def flood_submitter(token, port):
    n = 0
    while not stop.is_set():
        if not flooding.is_set():
            time.sleep(0.2)
            continue
        n += 1
        status, payload = call(token, "POST", "/v1/jobs", small_job(f"flood-{n}"), port=port)
        count("flood", status)
        if status == 201:
            with lock:
                accepted["flood"].add(json.loads(payload)["id"])
        elif status == 0:
            time.sleep(0.5)
        else:
            time.sleep(0.05)  # refused: asks again at once, ignoring Retry-After


def flood_lister(token, port):
    while not stop.is_set():
        if not flooding.is_set():
            time.sleep(0.2)
            continue
        status, _ = call(token, "GET", "/v1/jobs?limit=500", port=port)
        count("flood", f"list {status}")
        if status == 0:
            time.sleep(0.5)
        elif status != 200:
            time.sleep(0.05)


def ended(s):
    """Whether a follower that never reads was ended by the service: cut off
    (its buffer passed the bound), refused (429/503) or its server gone. It
    reads nothing: TCP_INFO's state, and a peek at the status line."""
    try:
        state = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
        if state in (7, 8):  # TCP_CLOSE, TCP_CLOSE_WAIT: the service closed it
            return True
        head = s.recv(12, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        return head[:9] == b"HTTP/1.1 " and head[9:10] != b"2"
    except BlockingIOError:
        return False
    except OSError:
        return True


def flood_followers(token, job, port):
    """Followers that never read, kept at 24 (past the per-tenant cap of
    16). One refused is replaced at once; each is replaced after 30 s in any
    case, as a careless client that finds no news retries: one the service
    cut off cannot tell (its unread bytes hold back the close)."""
    held = []  # (socket, when opened)
    while not stop.is_set():
        if flooding.is_set():
            now = time.monotonic()
            for entry in [e for e in held if ended(e[0]) or now - e[1] > 30]:
                entry[0].close()
                held.remove(entry)
                count("flood", "follower replaced")
            if len(held) < 24:  # past the per-tenant cap of 16
                s = follow(token, job, read=False, seconds=0, port=port)
                if s:
                    held.append((s, now))
        time.sleep(0.5)
    for s, _ in held:
        s.close()


def flood_main(token, chatty_id, seconds, out):
    """The flooding tenant, in its own process: its client's work does not
    slow the normal tenant's timing thread (Python's GIL)."""
    global lock
    lock = threading.Lock()  # the parent's may have been held at the fork
    flooding.set()
    threads = [threading.Thread(target=flood_submitter, args=(token, PORTS[i % len(PORTS)])) for i in range(4)]
    threads += [threading.Thread(target=flood_lister, args=(token, PORTS[i % len(PORTS)])) for i in range(4)]
    if chatty_id:
        threads.append(threading.Thread(target=flood_followers, args=(token, chatty_id, PORTS[-1])))
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    with open(out, "w") as f:
        json.dump({"accepted": sorted(accepted["flood"]), "statuses": statuses["flood"]}, f)


def start_postgres():
    """Cluster mode: initdb once, then the postmaster, as the user postgres."""
    pg = [os.path.join("/usr/lib/postgresql/15/bin", name) for name in ("initdb", "postgres")]
    as_pg = ["runuser", "-u", "postgres", "--"]
    if not os.path.isdir(os.path.join(PG_DIR, "data")):
        os.chmod(STATE, 0o755)
        os.makedirs(PG_DIR)
        subprocess.run(["chown", "postgres:postgres", PG_DIR], check=True)
        subprocess.run(as_pg + [pg[0], "-D", os.path.join(PG_DIR, "data"), "-U", "tpujobs", "--auth=trust"],
                       check=True, capture_output=True)
    log = open(os.path.join(STATE, "postgres.log"), "ab")
    postgres[0] = subprocess.Popen(as_pg + [pg[1], "-D", os.path.join(PG_DIR, "data"), "-k", PG_DIR, "-p", "5432",
                                            "-c", "listen_addresses=", "-c", "max_connections=200"],
                                   stdout=log, stderr=log, start_new_session=True)
    for _ in range(120):
        if subprocess.run(["psql", "-h", PG_DIR, "-U", "tpujobs", "-d", "postgres", "-tAc", "SELECT 1"],
                          capture_output=True).returncode == 0:
            subprocess.run(["createdb", "-h", PG_DIR, "-U", "tpujobs", "tpujobs"], capture_output=True)
            return True
        if postgres[0].poll() is not None:
            return False  # e.g. the killed one's backends still hold its shared memory
        time.sleep(0.5)
    raise SystemExit("PostgreSQL did not start; see " + STATE + "/postgres.log")


def postmaster_pid():
    data = os.path.join(PG_DIR, "data") if CLUSTER else os.path.join(STATE, "pgdata")
    return int(open(os.path.join(data, "postmaster.pid")).readline())


def restart_postgres():
    """Cluster mode: started again after its SIGKILL, as a supervisor would."""
    for _ in range(120):
        if start_postgres():
            note(f"PostgreSQL started again (postmaster {postmaster_pid()})")
            return
        time.sleep(1)
    raise SystemExit("PostgreSQL did not start again; see " + STATE + "/postgres.log")


def start_agent():
    log = open(os.path.join(STATE, "agent.log"), "ab")
    # SOAK_AGENT_ENV="MALLOC_ARENA_MAX=2 ...": the agent's environment, added to.
    env = dict(os.environ, **dict(kv.split("=", 1) for kv in os.environ.get("SOAK_AGENT_ENV", "").split()))
    proc = subprocess.Popen([BINARY, "agent", "--database-url", DATABASE_URL, "--pool", "v3-8", "--name", "a1",
                             "--workers", "2"], stdout=log, stderr=log, start_new_session=True, env=env)
    serves.append(proc)
    return proc


def start_serve(index=0):
    """Starts serve until it is ready, as a supervisor (systemd's
    Restart=on-failure) would: a start that exits is noted and tried again."""
    log = open(os.path.join(STATE, f"serve{index}.log"), "ab")
    port = PORTS[index]
    where = (["--database-url", DATABASE_URL, "--name", f"r{index + 1}", "--pool", "none"] if CLUSTER
             else ["--state-dir", STATE, "--pool", "v3-8"])
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        proc = subprocess.Popen([BINARY, "serve", "--listen", f"127.0.0.1:{port}"] + where,
                                stdout=log, stderr=log, start_new_session=True)
        serves.append(proc)
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as r:
                    if r.status == 200:
                        return proc
            except Exception:
                time.sleep(0.5)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            break
        note(f"serve exited at start (code {proc.returncode}); starting it again in 1 s")
        time.sleep(1)
    raise SystemExit("serve did not become ready in 180 s; see " + STATE + "/serve.log")


def rss_mb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def cpu_ticks(pid):
    """(user + system ticks, parent pid) of a process; None once it is gone."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12]), int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def machine_ticks():
    """(busy, all) ticks of every CPU of the machine (/proc/stat)."""
    values = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


class CpuShare:
    """Where the machine's CPU goes while the flood runs: each group's
    processes sampled every 10 s (a process's ticks since its last sample),
    PostgreSQL's backends found as the postmaster's children."""

    def __init__(self):
        self.last = {}  # pid -> ticks at its last sample
        self.groups = {}  # group -> ticks
        self.machine = None

    def sample(self, named):
        """named: {group: [pid, ...]}, the soak's own processes."""
        try:
            postmaster = postmaster_pid()
        except (OSError, ValueError):
            postmaster = None
        if postmaster:
            named = dict(named, postgres=[postmaster] + [int(p) for p in os.listdir("/proc") if p.isdigit()
                                                         and (cpu_ticks(int(p)) or (0, 0))[1] == postmaster])
        for group, pids in named.items():
            for pid in pids:
                now = cpu_ticks(pid)
                if now is None:
                    continue
                if pid in self.last:
                    self.groups[group] = self.groups.get(group, 0) + max(0, now[0] - self.last[pid])
                self.last[pid] = now[0]
        busy, total = machine_ticks()
        if self.machine is None:
            self.machine = (busy, total, busy, total)
        self.machine = (self.machine[0], self.machine[1], busy, total)

    def report(self):
        if not self.machine:
            return "(no samples)"
        hz = os.sysconf("SC_CLK_TCK")
        cores = os.cpu_count()
        busy = (self.machine[2] - self.machine[0]) / hz
        wall = (self.machine[3] - self.machine[1]) / hz / cores
        ours = sum(self.groups.values()) / hz
        lines = [f"{wall:.0f} s of the flood on {cores} cores ({wall * cores:.0f} core-seconds): "
                 f"{busy:.0f} busy, of which"]
        for group, ticks in sorted(self.groups.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {group:28} {ticks / hz:7.1f} core-s ({100 * ticks / hz / max(busy, 1e-9):4.1f}% of busy)")
        lines.append(f"  {'everything else (not the soak)':28} {busy - ours:7.1f} core-s "
                     f"({100 * (busy - ours) / max(busy, 1e-9):4.1f}% of busy)")
        return "\n".join(lines)


def handler_seconds(port):
    """The server's own histogram of request durations (arrival to answer):
    {(method, route, code): {le: count}}."""
    import re
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
            text = r.read().decode()
    except Exception:
        return None
    out = {}
    for m in re.finditer(r'tpujobs_http_request_duration_seconds_bucket\{method="(\w+)",route="([^"]+)",'
                         r'code="(\d+)",le="([^"]+)"\} (\d+)', text):
        out.setdefault((m[1], m[2], m[3]), {})[m[4]] = int(m[5])
    return out


def handler_report(before, after):
    """p50/p99 (the bucket bound they fall under) of each route between two reads."""
    if not before or not after:
        return "(not read)"
    lines = []
    for key in sorted(after):
        delta = {le: n - before.get(key, {}).get(le, 0) for le, n in after[key].items()}
        count = delta.get("+Inf", 0)
        if count <= 0:
            continue
        bounds = sorted((float(le), n) for le, n in delta.items() if le != "+Inf")
        under = lambda p: next((f"{le * 1000:g} ms" for le, n in bounds if n >= p * count), "> last bucket")
        lines.append(f"{key[0]:5} {key[1]:22} {key[2]} n={count:6} p50 <= {under(0.5):9} p99 <= {under(0.99)}")
    return "\n".join(lines)


def token(tenant, role="user"):
    args = [BINARY, "token", "create", "--tenant", tenant, "--role", role]
    args += ["--database-url", DATABASE_URL] if CLUSTER else ["--state-dir", STATE]
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip().split()[-1]


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))] if values else float("nan")


def main():
    others = {}  # cluster mode: r2 and the agent, sampled too
    if CLUSTER:
        start_postgres()
        serve = start_serve(0)  # (migrates the database)
        admin, normal, flood = token("ops", "admin"), token("normal"), token("flood")
        others = {"r2": start_serve(1), "agent": start_agent()}
        for _ in range(240):  # jobs are refused until the agent has registered its hosts
            status, payload = call(admin, "GET", "/v1/pool")
            if status == 200 and json.loads(payload).get("total_cores", 0) > 0:
                break
            time.sleep(0.5)
        note(f"cluster: r1 pid {serve.pid} port {PORTS[0]}, r2 pid {others['r2'].pid} port {PORTS[1]}, "
             f"agent pid {others['agent'].pid}, state {STATE}")
    else:
        admin, normal, flood = token("ops", "admin"), token("normal"), token("flood")
        serve = start_serve()
        note(f"serve pid {serve.pid} ready on port {PORT}, state {STATE}")
    status, _ = call(admin, "POST", "/v1/tenants/flood/limits", LIMITS)
    note(f"flood limits {LIMITS}: {status}")
    chatty = small_job("flood-chatty")
    chatty["trainer"].update({"max_epochs": -1, "log_every_n_steps": 1})
    chatty.pop("timeout")
    status, payload = call(flood, "POST", "/v1/jobs", chatty)
    chatty_id = json.loads(payload)["id"] if status == 201 else None
    if chatty_id:
        accepted["flood"].add(chatty_id)
    threads = [threading.Thread(target=normal_tenant, args=(normal,))]
    for t in threads:
        t.start()
    total = MINUTES * 60
    flood_out = os.path.join(STATE, "flood.json")
    flooder = multiprocessing.Process(target=flood_main, args=(flood, chatty_id, total - BASELINE, flood_out))
    rss = []
    held = []  # (seconds, the first replica's gauges)
    cpu = CpuShare()
    handlers = {}  # "flood starts" / "flood ends": the normal tenant's replica's histogram
    begin = time.monotonic()
    killed_pg = killed_serve = False
    while time.monotonic() - begin < total:
        elapsed = time.monotonic() - begin
        if elapsed >= BASELINE and not flooding.is_set():
            phase[0] = "flood"
            handlers["flood starts"] = handler_seconds(PORTS[-1])
            flooding.set()
            flooder.start()
            note(f"flood starts (process {flooder.pid})")
        if elapsed >= 0.4 * total and not killed_pg:
            killed_pg = True
            pid = postmaster_pid()
            killed_at = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            note(f"killed the postmaster {pid} (SIGKILL)")
            if CLUSTER:
                restart_postgres()
            faults.append((killed_at, ready_again(PORTS[-1])))
        if elapsed >= 0.7 * total and not killed_serve:
            killed_serve = True
            killed_at = time.monotonic()
            os.kill(serve.pid, signal.SIGKILL)
            serve.wait()
            note(f"killed serve {serve.pid} (SIGKILL)")
            serve = start_serve()
            note(f"serve pid {serve.pid} ready again")
            faults.append((killed_at, ready_again(PORTS[0])))
        sample = {"r1" if CLUSTER else "serve": rss_mb(serve.pid)}
        sample.update({name: rss_mb(proc.pid) for name, proc in others.items()})
        rss.append((round(elapsed), sample))
        held.append((round(elapsed), gauges(PORTS[0])))
        if flooder.pid:
            cpu.sample({"soak clients: flood (python)": [flooder.pid], "soak clients: normal (python)": [os.getpid()],
                        "tpujobs (serve, agent)": [p.pid for p in serves]})
        time.sleep(10)
    handlers["flood ends"] = handler_seconds(PORTS[-1])
    stop.set()
    for t in threads:
        t.join(timeout=60)
    flooder.join(timeout=120)
    try:
        flood_result = json.load(open(flood_out))
        accepted["flood"].update(flood_result["accepted"])
        statuses["flood"] = flood_result["statuses"]
    except OSError:
        note("the flood process left no result")
    if chatty_id:
        call(flood, "POST", f"/v1/jobs/{chatty_id}/cancel")
    host = PG_DIR if CLUSTER else STATE
    stored = subprocess.run(["psql", "-h", host, "-p", "5432", "-U", "tpujobs", "-d", "tpujobs", "-tAc",
                             "SELECT id FROM jobs"], capture_output=True, text=True)
    in_db = {int(x) for x in stored.stdout.split()} if stored.returncode == 0 else None
    states = subprocess.run(["psql", "-h", host, "-p", "5432", "-U", "tpujobs", "-d", "tpujobs", "-tAc",
                             "SELECT tenant, state, count(*) FROM jobs GROUP BY 1, 2 ORDER BY 1, 2"],
                            capture_output=True, text=True).stdout
    report(rss, in_db, states, held)
    print("\n## CPU while the flood ran\n" + cpu.report())
    print("\n## the normal tenant's replica's own handler times during the flood (GET /v1/jobs/{id} "
          "is the normal tenant's alone)\n" + handler_report(handlers.get("flood starts"), handlers.get("flood ends")))
    os.kill(serve.pid, signal.SIGTERM)
    serve.wait(timeout=60)


def ready_again(port, at_least=5.0, deadline=120):
    """When /readyz answers 200 again after a kill (the monotonic clock): after
    it was seen unready, or `at_least` seconds after the kill when it never was
    (its probe may miss a postmaster restarted within a second)."""
    start = time.monotonic()
    down = False
    while time.monotonic() < start + deadline:
        status, _ = call("", "GET", "/readyz", timeout=5, port=port)
        down = down or status != 200
        if status == 200 and (down or time.monotonic() >= start + at_least):
            break
        time.sleep(0.1)
    return time.monotonic()


def in_fault(began, took, margin=1.0):
    """Whether a request overlapped a restart (kill to ready again, 1 s either side)."""
    return any(began < to + margin and began + took > start - margin for start, to in faults)


GAUGES = ("tpujobs_log_followers", "tpujobs_log_followers_refused_total", "tpujobs_http_slow_streams_cut_off_total", "tpujobs_http_open_connections",
          "tpujobs_telemetry_queued_bytes", "tpujobs_wait_requests", "tpujobs_running_jobs")


def gauges(port):
    """The serve's own gauges beside its RSS: what it holds open and queued."""
    import re
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
    except Exception:
        return {}
    out = {}
    for name in GAUGES:
        values = [float(v) for v in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M)]
        if values:
            out[name] = sum(values)
    return out


def report(rss, in_db, states, held=()):
    print("\n## latencies of the normal tenant (seconds; status 0 = no answer)")
    rows = []
    for (ph, op), samples in sorted(latency.items()):
        rows.append((ph, op, samples))
        if ph == "flood":  # the same, without the requests that met a restart
            rows.append(("flood*", op, [x for x in samples if not in_fault(x[0], x[1])]))
    for ph, op, samples in rows:
        ok = [took for _, took, status in samples if 200 <= status < 300]
        bad = len(samples) - len(ok)
        print(f"{ph:8} {op:6} n={len(samples):5} p50={percentile(ok, 50):.4f} p99={percentile(ok, 99):.4f} "
              f"max={max(ok) if ok else float('nan'):.3f} not-2xx={bad}")
    print("flood* = the flood's requests that did not overlap a restart (kill to /readyz 200 again, at "
          f"least 5 s; 1 s either side): {' '.join(f'{to - start:.1f} s' for start, to in faults)}")
    print("\n## answers", json.dumps(statuses, sort_keys=True))
    for name in rss[0][1] if rss else []:
        print(f"\n## {name} RSS (MiB) every 10 s:",
              " ".join(f"{t}s:{m[name]:.0f}" if m.get(name) else f"{t}s:-" for t, m in rss))
    for name in GAUGES:
        if any(name in g for _, g in held):
            print(f"\n## {name} every 10 s:",
                  " ".join(f"{t}s:{g[name]:.0f}" if name in g else f"{t}s:-" for t, g in held))
    print("\n## jobs by tenant and state in PostgreSQL\n" + states)
    for tenant, ids in accepted.items():
        missing = sorted(ids - in_db) if in_db is not None else "unknown (psql failed)"
        print(f"{tenant}: {len(ids)} answered 201, missing from PostgreSQL: {missing}")
    print("\n## events\n" + "\n".join(events))


if __name__ == "__main__":
    try:
        main()
    finally:
        for child in multiprocessing.active_children():
            child.terminate()
        for proc in serves:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if CLUSTER and postgres[0] is not None:
            try:
                os.kill(postmaster_pid(), signal.SIGTERM)
                postgres[0].wait(timeout=60)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        if os.environ.get("SOAK_KEEP_STATE") != "1":
            import shutil
            shutil.rmtree(STATE, ignore_errors=True)
