"""Process handling shared by the scripts that run the services as processes:
services started as processes on 127.0.0.1, each logging to a file of its own."""
import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request


class Processes:
    def __init__(self, prefix):
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.running = {}
        self.started = {}

    def log_path(self, name):
        return os.path.join(self.work, f"{name}.log")

    def start(self, name, command, **env):
        # A restart (`ready`) goes on in the same log.
        out = open(self.log_path(name), "a" if name in self.started else "w")
        self.started[name] = (command, env)
        self.running[name] = subprocess.Popen(command, env=dict(os.environ, **env), stdout=out, stderr=subprocess.STDOUT, cwd=self.work)
        return self.running[name]

    def ready(self, name, port=None, seconds=60, join_within=20, attempts=3):
        """Waits until `name` answers /readyz with 200, and returns its port
        (read from /proc when None: a service started on port 0). The mock
        cluster's known issue (docs/deployment.md): about one notifier start in fifteen
        is never let into its consumer group, while a new one joins in
        seconds. A notifier whose /readyz still says "not yet a member"
        `join_within` s after its start is started again, as an operator
        would, at most `attempts` starts in all."""
        for attempt in range(1, attempts + 1):
            listening = port or listening_port(self.running[name])
            started = time.time()
            left_out = False
            while time.time() < started + seconds:
                status, detail = readiness(listening)
                if status == 200:
                    return listening
                if "not yet a member" in detail and time.time() - started >= join_within:
                    left_out = True
                    break
                time.sleep(0.2)
            if not left_out:
                raise SystemExit(f"{name} (port {listening}) never became ready: {detail}; see {self.log_path(name)}")
            command, env = self.started[name]
            self.stop(name)
            if attempt < attempts:
                print(f"{name}: not let into its consumer group within {join_within} s (the mock cluster's known issue, docs/deployment.md); "
                      "starting it again", flush=True)
                self.start(name, command, **env)
        raise SystemExit(f"{name} was not let into its consumer group in {attempts} starts; see {self.log_path(name)}")

    def stop(self, name):
        process = self.running.pop(name, None)
        if process and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    def stop_all(self):
        """Newest first, so the services leave before the broker they use."""
        for name in reversed(list(self.running)):
            self.stop(name)

    def broker(self, bin_dir, partitions=12):
        """A mock cluster from guidance-dev --broker-only; returns its bootstrap string."""
        path = os.path.join(self.work, "bootstrap")
        if os.path.exists(path):
            os.remove(path)
        self.start("broker", [os.path.join(bin_dir, "guidance-dev"), "--broker-only", "--bootstrap-file", path], TOPIC_PARTITIONS=str(partitions))
        for _ in range(100):
            if os.path.exists(path):
                return open(path).read().strip()
            time.sleep(0.1)
        raise SystemExit(f"the mock cluster did not start; see {self.log_path('broker')}")


def wait_ready(port, seconds=60, interval=0.2, path="/readyz"):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if readiness(port, path)[0] == 200:
            return
        time.sleep(interval)
    raise SystemExit(f"port {port} never became ready")


def readiness(port, path="/readyz"):
    """The probe's status and its JSON's detail ("" when it has none); 0 while nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, body = error.code, error.read()
    except Exception:
        return 0, "no answer"
    try:
        return status, json.loads(body).get("detail", "")
    except (ValueError, AttributeError):
        return status, ""


def listening_port(process, seconds=60):
    """The TCP port `process` listens on once it does, read from /proc: a
    service started with port 0 binds whatever the kernel gives it, so no
    port chosen beforehand can be taken by another process in between."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"process {process.pid} exited (status {process.returncode}) before it listened")
        inodes = set()
        try:
            for fd in os.listdir(f"/proc/{process.pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{process.pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            pass
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    for line in f.readlines()[1:]:
                        fields = line.split()
                        # local address, state 0A (LISTEN), inode
                        if fields[3] == "0A" and fields[9] in inodes:
                            return int(fields[1].split(":")[1], 16)
            except OSError:
                pass
        time.sleep(0.05)
    raise SystemExit(f"process {process.pid} did not listen within {seconds} s")


def free_port():
    """A port free now, for a service that must know another's address
    before either starts (prefer port 0 and `listening_port`). Chosen
    outside the kernel's ephemeral range, which the kernel hands to every
    outgoing connection (librdkafka's, HTTP clients'): a port from bind(0)
    comes from that range and is taken back by them soonest."""
    low, high = 32768, 60999
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = map(int, f.read().split())
    except OSError:
        pass
    candidates = [port for port in range(20000, 32768) if port < low or port > high] or list(range(high + 1, 65536))
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.choice(candidates)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise SystemExit("no free port found")
