#!/usr/bin/env python3
"""Time from submit to RUNNING on an idle pool, for N sequential jobs.

For each job: POST /v1/jobs, then poll GET /v1/jobs/{id} with no pause
until the state is RUNNING (or later), then read /v1/jobs/{id}/events,
then cancel the job and wait until it is terminal, so the next job again
finds an idle pool. Three figures per job:

  client   perf_counter from sending the POST to the first GET that shows
           RUNNING (includes the 201's commit and the polling round trips:
           an upper bound, microsecond resolution)
  events   job_events: at(RUNNING) - at(QUEUED) (server/database clock,
           millisecond resolution as the API renders it)
  starting job_events: at(STARTING) - at(QUEUED) (the scheduler's part)

Prints one summary line per figure: p50 p90 p99 max in milliseconds.

--pause MIN:MAX waits a time drawn uniformly from MIN to MAX seconds before
each submit (--seed fixes the draws): jobs that arrive at random times, as a
CI pipeline's do, rather than just after the last one ended.
"""
import argparse
import datetime
import http.client
import json
import random
import sys
import time


def parse_time(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")


def percentile(values, p):
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(round(p / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[index]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--pause", default="0:0", help="MIN:MAX seconds before each submit")
    parser.add_argument("--seed", type=int, default=44)
    args = parser.parse_args()
    try:
        pause_min, pause_max = (float(x) for x in args.pause.split(":"))
    except ValueError:
        sys.exit(f"--pause takes MIN:MAX seconds, not {args.pause!r}")
    draws = random.Random(args.seed)

    with open(args.spec, "rb") as f:
        body = f.read()
    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)

    def call(method, path, payload=None):
        headers = {"Content-Type": "application/json"} if payload is not None else {}
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")

    client_ms, events_ms, starting_ms = [], [], []
    polls = 0
    for _ in range(args.jobs):
        if pause_max > 0:
            time.sleep(draws.uniform(pause_min, pause_max))
        t0 = time.perf_counter()
        status, job = call("POST", "/v1/jobs", body)
        if status != 201:
            sys.exit(f"submit answered {status}: {job}")
        job_id = job["id"]
        state = job["state"]
        while state not in ("RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"):
            status, job = call("GET", f"/v1/jobs/{job_id}")
            polls += 1
            state = job["state"]
        t1 = time.perf_counter()
        if state != "RUNNING":
            sys.exit(f"job {job_id} ended {state} before it was seen RUNNING: {job.get('error')}")
        client_ms.append((t1 - t0) * 1000.0)
        status, events = call("GET", f"/v1/jobs/{job_id}/events")
        at = {e["to"]: parse_time(e["at"]) for e in events["events"]}
        events_ms.append((at["RUNNING"] - at["QUEUED"]).total_seconds() * 1000.0)
        starting_ms.append((at["STARTING"] - at["QUEUED"]).total_seconds() * 1000.0)
        call("POST", f"/v1/jobs/{job_id}/cancel")
        while state not in ("SUCCEEDED", "FAILED", "CANCELLED"):
            status, job = call("GET", f"/v1/jobs/{job_id}/wait?timeout=10")
            state = job["state"]

    for name, values in (("client", client_ms), ("events", events_ms), ("starting", starting_ms)):
        print(f"{name} p50 {percentile(values, 50):.2f} p90 {percentile(values, 90):.2f} "
              f"p99 {percentile(values, 99):.2f} max {max(values):.2f} n {len(values)}")
    print(f"polls_per_job {polls / args.jobs:.1f}")


if __name__ == "__main__":
    main()
