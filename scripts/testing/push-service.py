#!/usr/bin/env python3
"""A push service for the Web Push tests, speaking RFC 8030 to the notifier:
it hands out subscriptions as a browser would and checks every message it
receives with the reference libraries (`http_ece` decrypts per RFC 8291,
`py_vapid` verifies the VAPID token per RFC 8292), appending one JSON line
per message to --log:
{"device", "status", "decrypted" (the payload as JSON, or null), "vapid"
(true when the token verified against --vapid-key with the right audience,
expiry and subject), "error", "ttl", "urgency", "topic", "encoding"}.

GET  /subscribe/<device>  a new subscription: {"endpoint", "keys": {"p256dh", "auth"}}
POST /push/<device>       a push message; 201, or 410 for a device in --gone
                          (or one made gone by POST /gone/<device>)
POST /slow/<device>       a tarpit from now on: that device's pushes are
                          answered only after 30 s (a sender gives up first);
                          each logged as {"device", "arrived": true} when it comes
--vapid-key KEY     the notifier's VAPID public key (base64url)
Stops on SIGTERM.
"""
import argparse
import base64
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
import py_vapid
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--vapid-key", required=True)
parser.add_argument("--gone", default="")
args = parser.parse_args()

origin = f"http://127.0.0.1:{args.port}"
devices = {}  # device -> (private key, auth secret)
gone = set(filter(None, args.gone.split(",")))
slow = set()
lock = threading.Lock()
log = open(args.log, "a", encoding="utf-8")


def b64(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def unb64(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_vapid(authorization):
    """The token verifies with py_vapid, its key is the notifier's, and its claims are RFC 8292's."""
    if not py_vapid.Vapid02.verify(authorization):
        return False, "the signature does not verify"
    parts = dict(part.split("=", 1) for part in authorization.split(" ", 1)[1].split(","))
    if parts["k"] != args.vapid_key:
        return False, f"signed with another key: {parts['k']}"
    claims = json.loads(unb64(parts["t"].split(".")[1]))
    if claims.get("aud") != origin:
        return False, f"aud is {claims.get('aud')}, not {origin}"
    if not (time.time() < claims.get("exp", 0) <= time.time() + 86400):
        return False, f"exp {claims.get('exp')} is not within the next 24 hours"
    if not str(claims.get("sub", "")).startswith(("mailto:", "https://")):
        return False, f"sub {claims.get('sub')} is neither mailto: nor https:"
    return True, None


class Service(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def answer(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if body:
            self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if not self.path.startswith("/subscribe/"):
            return self.answer(404)
        device = self.path.split("/")[2]
        key = ec.generate_private_key(ec.SECP256R1())
        auth = os.urandom(16)
        with lock:
            devices[device] = (key, auth)
        point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        self.answer(200, json.dumps({"endpoint": f"{origin}/push/{device}", "keys": {"p256dh": b64(point), "auth": b64(auth)}}).encode())

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        parts = self.path.split("/")
        if self.path.startswith("/gone/") or self.path.startswith("/slow/"):
            with lock:
                (gone if parts[1] == "gone" else slow).add(parts[2])
            return self.answer(204)
        if not self.path.startswith("/push/"):
            return self.answer(404)
        device = parts[2]
        record = {"device": device, "decrypted": None, "vapid": False, "error": None, "ttl": self.headers.get("TTL"),
                  "urgency": self.headers.get("Urgency"), "topic": self.headers.get("Topic"),
                  "encoding": self.headers.get("Content-Encoding"), "bytes": len(body)}
        with lock:
            keys = devices.get(device)
            is_gone = device in gone
            tarpit = device in slow
        if tarpit:
            record["slow"] = True
            # Said as it arrives, so a test knows the tarpit holds it.
            with lock:
                log.write(json.dumps({"device": device, "arrived": True}) + "\n")
                log.flush()
            time.sleep(30)
        try:
            record["vapid"], record["error"] = check_vapid(self.headers.get("Authorization", ""))
            if keys is None:
                raise ValueError("no such subscription")
            plain = http_ece.decrypt(body, private_key=keys[0], auth_secret=keys[1], version="aes128gcm")
            record["decrypted"] = json.loads(plain)
        except Exception as error:  # the libraries' verification and decryption errors
            record["error"] = f"{type(error).__name__}: {error}"
        status = 410 if is_gone else 201 if record["decrypted"] is not None and record["vapid"] else 400
        record["status"] = status
        with lock:
            log.write(json.dumps(record, ensure_ascii=False) + "\n")
            log.flush()
        self.answer(status)


# A parent that handles SIGTERM itself (the Swift test process) may have it
# blocked, and a child inherits the mask: unblock it, or SIGTERM never arrives.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
server = ThreadingHTTPServer(("127.0.0.1", args.port), Service)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
print(f"push-service: listening on {origin}", flush=True)
server.serve_forever()
