#!/usr/bin/python3
"""A real SMTP server for the delivery tests and the benchmark (aiosmtpd from
Debian's python3-aiosmtpd; run with /usr/bin/python3, which has it).

Each accepted message is parsed with Python's own `email` package (from
bytes, see PITFALLS) and one JSON line is appended to --log:
{"messageId", "digestId", "to", "from", "subject", "plain", "html",
"inReplyTo", "references", "contentType"}. With --fast nothing is parsed or
written but "<count> <unix time>" per message (the benchmark); with
--recipients, "<count> <unix time> <recipient> <Message-ID>" (scripts/district-day:
each school's last e-mail, and none twice).

--reject ADDRESS  answers 550 to RCPT TO for that address (repeatable)
--defer-first     answers 451 to the first DATA of every Message-ID
--delay-ms N      waits N ms before answering DATA (a slow server)
--workers N       N processes accept on the one port (SO_REUSEPORT), as a
                  relay serves connections in parallel; each appends its own
                  lines to --log, and counts and defers (--defer-first) alone
Stops on SIGTERM (with its workers).
"""
import argparse
import asyncio
import ctypes
import email
import email.policy
import json
import os
import re
import signal
import socket
import time

from aiosmtpd.smtp import SMTP

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--reject", action="append", default=[])
parser.add_argument("--defer-first", action="store_true")
parser.add_argument("--delay-ms", type=int, default=0)
parser.add_argument("--fast", action="store_true")
parser.add_argument("--recipients", action="store_true")
parser.add_argument("--workers", type=int, default=1)
args = parser.parse_args()


class Handler:
    def __init__(self):
        self.deferred = set()
        self.count = 0
        self.log = open(args.log, "a", encoding="utf-8")

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in args.reject:
            return f"550 5.1.1 <{address}>: Recipient address rejected: no such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if args.delay_ms:
            await asyncio.sleep(args.delay_ms / 1000)
        self.count += 1
        if args.recipients:
            found = re.search(rb"^Message-ID:\s*(\S+)", envelope.content, re.M | re.I)
            message_id = found.group(1).decode() if found else "-"
            self.log.write(f"{self.count} {time.time():.3f} {','.join(envelope.rcpt_tos)} {message_id}\n")
            self.log.flush()
            return "250 Message accepted for delivery"
        if args.fast:
            self.log.write(f"{self.count} {time.time():.3f}\n")
            self.log.flush()
            return "250 Message accepted for delivery"
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        message_id = str(message["Message-ID"])
        if args.defer_first and message_id not in self.deferred:
            self.deferred.add(message_id)
            return "451 4.3.0 Temporary failure, try again later"
        plain = message.get_body(preferencelist=("plain",))
        html = message.get_body(preferencelist=("html",))
        record = {
            "messageId": message_id,
            "digestId": str(message["X-Guidance-Digest-Id"]),
            "to": envelope.rcpt_tos,
            "from": envelope.mail_from,
            "toHeader": str(message["To"]),
            "fromHeader": str(message["From"]),
            "subject": str(message["Subject"]),
            "plain": plain.get_content() if plain else None,
            "html": html.get_content() if html else None,
            "inReplyTo": str(message["In-Reply-To"]) if message["In-Reply-To"] else None,
            "references": str(message["References"]) if message["References"] else None,
            "contentType": message.get_content_type(),
            "date": str(message["Date"]),
        }
        self.log.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.log.flush()
        return "250 Message accepted for delivery"


def serve(listening):
    """Serves SMTP on the bound socket until SIGTERM."""
    handler = Handler()

    def finish(*_):
        handler.log.close()
        os._exit(0)

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)
    loop = asyncio.new_event_loop()
    # A fixed name: the default asks DNS for this host's (one lookup a connection).
    loop.run_until_complete(loop.create_server(lambda: SMTP(handler, decode_data=False, hostname="smtp-sink.test"), sock=listening))
    loop.run_forever()


def bound():
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.workers > 1:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    listening.bind(("127.0.0.1", args.port))
    listening.listen(128)
    return listening


# A parent that handles SIGTERM itself (the Swift test process) may have it
# blocked, and a child inherits the mask: unblock it, or SIGTERM never arrives.
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
if args.workers == 1:
    listening = bound()
    print(f"smtp-sink: listening on 127.0.0.1:{args.port}", flush=True)
    serve(listening)  # until SIGTERM: it does not return
# Each worker binds its own socket to the port, and the kernel spreads the
# connections over them; a worker ends with its parent.
sockets = [bound() for _ in range(args.workers)]
workers = []
for listening in sockets:
    pid = os.fork()
    if pid == 0:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        for other in sockets:
            if other is not listening:
                other.close()
        serve(listening)
    workers.append(pid)
for listening in sockets:
    listening.close()
print(f"smtp-sink: listening on 127.0.0.1:{args.port} ({args.workers} workers)", flush=True)


def stop(*_):
    for pid in workers:
        os.kill(pid, signal.SIGTERM)
    for pid in workers:
        os.waitpid(pid, 0)
    os._exit(0)


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
signal.pause()
