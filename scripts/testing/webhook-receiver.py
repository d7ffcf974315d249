#!/usr/bin/env python3
"""A webhook receiver for the delivery tests: verifies every request with the
reference Standard Webhooks library (`standardwebhooks` from PyPI) and
appends one JSON line per request to --log:
{"id", "status", "verified", "error", "type", "digestId", "teacherId",
"frequencies" (each entry's), "photoUrls" (how many entries carry one), and for
a 보호자 안내 (case.guardian_notice) "caseId", "text", "student"}.

--secret whsec_...  the secret to verify with (a wrong one must fail)
--fail-first        answers 500 to the first request of every webhook-id
Answers 204 to a verified request, 400 to one that is not. Stops on SIGTERM.
"""
import argparse
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--secret", required=True)
parser.add_argument("--fail-first", action="store_true")
args = parser.parse_args()

verifier = Webhook(args.secret)
seen = set()
lock = threading.Lock()
log = open(args.log, "a", encoding="utf-8")


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        headers = {name.lower(): value for name, value in self.headers.items()}
        record = {"id": headers.get("webhook-id"), "verified": False, "error": None}
        try:
            payload = verifier.verify(body, headers)
            record.update(verified=True, type=payload.get("type"), digestId=payload["data"].get("digestId"),
                          teacherId=payload["data"].get("teacherId"), timestamp=payload.get("timestamp"),
                          frequencies=[e.get("frequency") for e in payload["data"].get("entries", [])],
                          photoUrls=sum(1 for e in payload["data"].get("entries", []) if "photoUrl" in e),
                          caseId=payload["data"].get("caseId"), text=payload["data"].get("text"),
                          student=payload["data"].get("student"))
        except Exception as error:  # the library's verification errors
            record["error"] = f"{type(error).__name__}: {error}"
        with lock:
            first = record["id"] not in seen
            seen.add(record["id"])
        if record["verified"] and args.fail_first and first:
            status = 500
        else:
            status = 204 if record["verified"] else 400
        record["status"] = status
        with lock:
            log.write(json.dumps(record, ensure_ascii=False) + "\n")
            log.flush()
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()


# A parent that handles SIGTERM itself (the Swift test process) may have it
# blocked, and a child inherits the mask: unblock it, or SIGTERM never arrives.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
server = ThreadingHTTPServer(("127.0.0.1", args.port), Receiver)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print(f"webhook-receiver: listening on 127.0.0.1:{args.port}", flush=True)
server.serve_forever()
