"""A phone's slow network in front of a service on 127.0.0.1, for browser
tests: a TCP relay that delays every byte by half the round trip each way
(a new connection by a whole one first) and shares one bandwidth among all
connections in each direction, like a phone's link. Unlike Chrome DevTools' throttling it slows everything the
browser sends to it, the service worker's own fetches included. `cut()`
takes the service away (connections dropped, new ones refused) and `mend()`
brings it back on the same port.

    link = SlowLink(service_port, round_trip=0.4, kbits=400)
    browser.get(f"http://127.0.0.1:{link.port}/")
"""
import asyncio
import threading
import time

SEGMENT = 1460


class Direction:
    """One direction of the link: bytes leave one segment at a time, in the order they were reserved."""

    def __init__(self, bytes_per_second):
        self.rate = bytes_per_second
        self.free_at = 0.0

    async def pass_through(self, length):
        loop = asyncio.get_running_loop()
        start = max(loop.time(), self.free_at)
        self.free_at = start + length / self.rate
        await asyncio.sleep(self.free_at - loop.time())


class SlowLink:
    def __init__(self, target_port, round_trip=0.4, kbits=400, port=0):
        self.target = target_port
        self.delay = round_trip / 2
        self.rate = kbits * 1000 / 8
        self.bytes = {"down": 0, "up": 0}
        self.loop = asyncio.new_event_loop()
        self.server = None
        self.connections = set()
        self.port = port
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.mend()

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=10)

    def mend(self):
        async def listen():
            self.up, self.down = Direction(self.rate), Direction(self.rate)
            self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port, reuse_address=True)
            self.port = self.server.sockets[0].getsockname()[1]
        self._call(listen())

    def cut(self):
        async def close():
            self.server.close()
            for writer in list(self.connections):
                writer.transport.abort()
            # A connection still in its handshake's delay sees it is gone (`_serve`).
            self.connections.clear()
            await self.server.wait_closed()
        self._call(close())

    def close(self):
        """Cuts the link and ends its connections' tasks before the loop stops (none left pending at exit)."""
        self.cut()

        async def finish():
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self._call(finish())
        self.loop.call_soon_threadsafe(self.loop.stop)

    async def _serve(self, client_reader, client_writer):
        # A new connection costs a round trip (TCP's handshake) before anything moves;
        # one accepted just before a cut is cut with the rest (it would carry on after it).
        self.connections.add(client_writer)
        await asyncio.sleep(2 * self.delay)
        if client_writer not in self.connections:
            client_writer.transport.abort()
            return
        try:
            server_reader, server_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            self.connections.discard(client_writer)
            client_writer.transport.abort()
            return
        self.connections.add(server_writer)
        try:
            await asyncio.gather(self._pump(client_reader, server_writer, self.up, "up"),
                                 self._pump(server_reader, client_writer, self.down, "down"))
        finally:
            self.connections.difference_update({client_writer, server_writer})
            for writer in (client_writer, server_writer):
                writer.transport.abort()

    async def _pump(self, reader, writer, direction, name):
        """Reads as bytes come and hands each chunk on after the one-way delay, at the link's rate."""
        queue = asyncio.Queue()

        async def deliver():
            loop = asyncio.get_running_loop()
            while True:
                due, chunk = await queue.get()
                if chunk is None:
                    writer.write_eof() if writer.can_write_eof() else None
                    return
                await asyncio.sleep(max(0, due - loop.time()))
                for at in range(0, len(chunk), SEGMENT):
                    await direction.pass_through(len(chunk[at:at + SEGMENT]))
                    writer.write(chunk[at:at + SEGMENT])
                    self.bytes[name] += len(chunk[at:at + SEGMENT])
                await writer.drain()

        sender = asyncio.ensure_future(deliver())
        try:
            while True:
                chunk = await reader.read(65536)
                queue.put_nowait((asyncio.get_running_loop().time() + self.delay, chunk or None))
                if not chunk:
                    break
            await sender
        except (ConnectionError, OSError):
            sender.cancel()
        finally:
            if not sender.done():
                await asyncio.wait([sender], timeout=30)


if __name__ == "__main__":
    # A quick look: python3 slow_link.py TARGET_PORT, then fetch through the printed port.
    import sys
    link = SlowLink(int(sys.argv[1]))
    print(f"slow link on 127.0.0.1:{link.port} → 127.0.0.1:{sys.argv[1]}", flush=True)
    while True:
        time.sleep(3600)
