"""Process handling shared by scripts/bench and scripts/multi-replica-test:
services started as processes on 127.0.0.1, each logging to a file of its own."""
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request


class Processes:
    def __init__(self, prefix):
        self.work = tempfile.mkdtemp(prefix=prefix)
        self.running = {}

    def log_path(self, name):
        return os.path.join(self.work, f"{name}.log")

    def start(self, name, command, **env):
        out = open(self.log_path(name), "w")
        self.running[name] = subprocess.Popen(command, env=dict(os.environ, **env), stdout=out, stderr=subprocess.STDOUT, cwd=self.work)
        return self.running[name]

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
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
                if response.status == 200:
                    return
        except Exception:
            pass
        time.sleep(interval)
    raise SystemExit(f"port {port} never became ready")


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
