"""Process handling shared by scripts/bench and scripts/multi-replica-test:
services started as processes on 127.0.0.1, each logging to a file of its own."""
import os
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


def wait_ready(port, seconds=60, interval=0.2):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except Exception:
            pass
        time.sleep(interval)
    raise SystemExit(f"port {port} never became ready")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
