#!/usr/bin/env python3
"""The benchmark table: starts a mock cluster, the services and a district
roster (200 schools by default) as processes on 127.0.0.1, runs each
measurement bounded in time, and prints one table with the targets.

The ingest runs as users run it: tokens.csv present (every POST carries a
gate teacher's bearer token) and `info` logs. Two C programs in bench/, built
and run here on the same broker, give the ratios: a libmicrohttpd hello server
(the HTTP ceiling) and an ingest floor doing only the bare work of a request
(read the body, produce idempotently with acks=all, answer 202 from the
delivery report).

usage: scripts/bench [--schools N] [--seconds S] [--events N]
Needs wrk, a C compiler and the release build (scripts/bench builds it).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from processes import Processes, wait_ready  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, ".build", "release")
parser = argparse.ArgumentParser()
parser.add_argument("--schools", type=int, default=200)
parser.add_argument("--seconds", type=int, default=10, help="length of each wrk run")
parser.add_argument("--events", type=int, default=100_000, help="backlog for the apply rows")
args = parser.parse_args()

processes = Processes("bench-")
work = processes.work


def say(text):
    print(f"bench: {text}", file=sys.stderr, flush=True)


def run(command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT, **kwargs).stdout


def start(name, command, **env):
    """A service at its production default, `info` logs (to a file)."""
    return processes.start(name, command, LOG_LEVEL="info", **env)


def stop(name):
    processes.stop(name)


def peak_rss_mib(name):
    with open(f"/proc/{processes.running[name].pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def broker():
    return processes.broker(BIN)


def build_c(name, libraries):
    """Compiles bench/<name>.c against `libraries` (pkg-config names)."""
    flags = run(["pkg-config", "--cflags", "--libs"] + libraries).split()
    binary = os.path.join(work, name)
    run(["cc", "-O2", "-Wall", "-o", binary, os.path.join(ROOT, "bench", f"{name}.c")] + flags + ["-lpthread"])
    return binary


class Prober:
    """GET /readyz every 100 ms while a run goes on, as a strict orchestrator would."""
    def __init__(self, port):
        self.port, self.answers, self.stopped = port, [], threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stopped.wait(0.1):
            started = time.time()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=5) as response:
                    self.answers.append((response.status, time.time() - started))
            except Exception:
                self.answers.append((0, time.time() - started))

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join()


def wrk(url, connections, script=None, seconds=None):
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds or args.seconds}s", "--latency"]
    if script:
        command += ["-s", os.path.join(ROOT, "bench", "post.lua")]
    output = subprocess.run(command + [url], check=True, capture_output=True, text=True, env=dict(os.environ, SCHOOLS=str(args.schools))).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))
    line = re.search(r"requests/s (\S+)\s+p50 (\S+) ms\s+p99 (\S+) ms\s+p99.9 (\S+) ms\s+errors (\d+)", output)
    if line:
        return {"rps": rps, "p50": float(line.group(2)), "p99": float(line.group(3)), "p999": float(line.group(4)), "errors": int(line.group(5))}
    return {"rps": rps}


def mean(runs):
    """The runs' figures averaged, key by key."""
    return {key: sum(run[key] for run in runs) / len(runs) for key in runs[0]}


def metric_value(port, name):
    """The sum of a counter's series in a service's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as response:
        text = response.read().decode()
    return sum(float(value) for value in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


def histogram_percentiles(port, name, percentiles):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics") as response:
        text = response.read().decode()
    buckets = []
    for match in re.finditer(rf'^{name}_bucket{{le="([^"]+)"}} (\d+)$', text, re.M):
        bound = float("inf") if match.group(1) == "+Inf" else float(match.group(1))
        buckets.append((bound, int(match.group(2))))
    total = buckets[-1][1] if buckets else 0
    results = []
    for p in percentiles:
        rank = total * p
        previous_bound, previous_count = 0.0, 0
        for bound, count in buckets:
            if count >= rank:
                fraction = (rank - previous_count) / max(1, count - previous_count)
                upper = bound if bound != float("inf") else previous_bound
                results.append((previous_bound + (upper - previous_bound) * fraction) * 1000)
                break
            previous_bound, previous_count = bound, count
    return total, results



def main():
    roster = "/tmp/broster"
    open_roster = os.path.join(work, "roster-open")
    shutil.copytree(roster, open_roster)
    os.remove(os.path.join(open_roster, "tokens.csv"))
    ingest_port = 18180
    bootstrap = broker()
    notifier_port = 18181
    sink_port = 18125
    sink_log = os.path.join(work, "sink.log")
    processes.start("sink", ["/usr/bin/python3", os.path.join(ROOT, "scripts", "testing", "smtp-sink.py"), "--fast", "--port", str(sink_port), "--log", sink_log])
    start("ingest", [os.path.join(BIN, "guidance-ingest")], ROSTER_DIR=roster, INGEST_PORT=str(ingest_port), KAFKA_BOOTSTRAP_SERVERS=bootstrap)
    start("notifier", [os.environ.get("NOTIFIER", os.path.join(BIN, "guidance-notifier"))], ROSTER_DIR=open_roster, NOTIFIER_PORT=str(notifier_port),
          KAFKA_BOOTSTRAP_SERVERS=bootstrap, STORE_URL=os.environ.get("STORE", f"sqlite:{work}/notifier.db"),
          **({} if os.environ.get("NOSMTP") else dict(SMTP_URL=f"smtp://127.0.0.1:{sink_port}", SMTP_FROM="학생부 알림 <guidance@school.example>")))
    wait_ready(ingest_port)
    wait_ready(notifier_port)
    time.sleep(4)
    load = run([os.path.join(BIN, "guidance-bench"), "load", "--url", f"http://127.0.0.1:{ingest_port}", "--rate", "1000", "--seconds", "20"],
               env=dict(os.environ, ROSTER_DIR=roster)).strip()
    time.sleep(2)
    if os.environ.get("PAUSE"):
        print(f"notifier pid {processes.running['notifier'].pid}", flush=True); time.sleep(float(os.environ["PAUSE"]))
    def cpu():
        with open(f"/proc/{processes.running['notifier'].pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    cpu0 = cpu()
    perf = None
    if os.environ.get("PERF"):
        perf = subprocess.Popen(["perf", "record", "-F", "1999", "-g", "-p", str(processes.running['notifier'].pid), "-o", os.environ["PERF"]], stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    started = time.time()
    request = urllib.request.Request(f"http://127.0.0.1:{notifier_port}/v1/digests/run", data=b"{}", method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        runs = json.loads(response.read())["runs"]
    digest_seconds = time.time() - started
    if perf:
        perf.send_signal(2); perf.wait()
    print(f"notifier cpu during run: {cpu() - cpu0:.2f} s", flush=True)
    digests = sum(r["digests"] for r in runs)
    print(f"district run: {digest_seconds:.2f} s, {digests} digests, {len(runs)} runs; load: {load[:200]}", flush=True)
    skipped = metric_value(notifier_port, "notifier_deliveries_skipped_total")
    expected = digests - int(skipped)
    mails, last = 0, started
    deadline = time.time() + 120
    while not os.environ.get("NOSMTP") and mails < expected and time.time() < deadline:
        time.sleep(0.2)
        lines = open(sink_log).read().split("\n")
        complete = [line for line in lines if line.count(" ") == 1]
        if complete:
            mails, last = int(complete[-1].split()[0]), float(complete[-1].split()[1])
    print(f"mails: {mails} of {expected} in {last - started:.2f} s from the run's start")


try:
    main()
finally:
    processes.stop_all()
