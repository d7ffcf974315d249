/// The server's open connections: which are sending a request (the reaper
/// closes those too slow) and how many each client address holds.
///
/// Fairness: libmicrohttpd's per-address limit lets a school behind one NAT
/// address hold many connections, so two such addresses could fill the
/// whole `connectionLimit` with idle sockets and starve everyone else. Past
/// `fairShare` connections (nine tenths of the limit), each new connection
/// closes the oldest connection waiting for a request of the address that
/// holds the most: a newcomer always finds room, and an address holding
/// many idle sockets loses them first. A connection whose request is in
/// (its handler running, its answer on the way) is never closed.
///
/// Per address: at `perAddressLimit`, a new connection takes the place of
/// that address's oldest idle one, so one client's idle sockets cannot
/// deny a working client behind the same address (a school's NAT); only
/// when every connection of the address is busy is the new one refused.
/// (libmicrohttpd's own per-address limit refuses the newcomer instead, so
/// it is not used.)
///
/// Used under the server's lock; the sockets it names are shut down after.
struct Connections {
    struct Entry {
        let socket: Int32
        let address: String
        /// When the current request began (or the previous answer went),
        /// while `waiting`.
        var since: Duration
        /// Waiting for a request, or receiving one: nothing of it handled yet.
        var waiting: Bool
        /// The waited-for request's headers are in; its body may follow.
        var headersIn = false
        /// Time beyond the server's limit for the request to arrive (an upload's body).
        var allowance: Duration = .zero
    }

    private var entries: [UInt: Entry] = [:]
    private var perAddress: [String: Int] = [:]
    /// Past this many open connections, a new one makes room (see above).
    let fairShare: Int
    let perAddressLimit: Int

    init(connectionLimit: Int, perAddressLimit: Int = .max) {
        fairShare = max(1, connectionLimit - max(1, connectionLimit / 10))
        self.perAddressLimit = max(1, perAddressLimit)
    }

    var count: Int { entries.count }

    func count(of address: String) -> Int { perAddress[address] ?? 0 }

    /// A connection opened; the socket to shut down to make room, if any
    /// (the new one's own when its address is at its limit with none idle).
    mutating func opened(_ key: UInt, socket: Int32, address: String, at now: Duration) -> Int32? {
        entries[key] = Entry(socket: socket, address: address, since: now, waiting: true)
        perAddress[address, default: 0] += 1
        if perAddress[address, default: 0] > perAddressLimit {
            guard let oldest = oldestWaiting(of: address, sparing: key) else {
                update(key) { $0.waiting = false }
                return socket
            }
            return oldest
        }
        return entries.count > fairShare ? makeRoom(sparing: key) : nil
    }

    mutating func closed(_ key: UInt) {
        guard let entry = entries.removeValue(forKey: key) else { return }
        if let held = perAddress[entry.address], held > 1 { perAddress[entry.address] = held - 1 } else { perAddress[entry.address] = nil }
    }

    /// The connection waits for (or receives) its next request from now on.
    mutating func waiting(_ key: UInt, at now: Duration) {
        update(key) { entry in
            entry.since = now
            entry.waiting = true
            entry.headersIn = false
            entry.allowance = .zero
        }
    }

    mutating func headersIn(_ key: UInt, allowance: Duration = .zero) {
        update(key) { entry in
            entry.headersIn = true
            entry.allowance = allowance
        }
    }

    /// The request is in: it is being handled and answered.
    mutating func received(_ key: UInt) {
        update(key) { $0.waiting = false }
    }

    /// Changes the entry where it is stored: one look-up, no copy of it
    /// (three of these run for every request). Not `entries[key]?.field = …`:
    /// the dictionary's modify accessor allocates its frame on the heap, a
    /// `malloc` per field per request.
    private mutating func update(_ key: UInt, _ change: (inout Entry) -> Void) {
        guard let index = entries.index(forKey: key) else { return }
        change(&entries.values[index])
    }

    /// Connections that waited longer than `limit`, no longer counted as
    /// waiting: their sockets, and whether their request's headers came.
    mutating func late(at now: Duration, limit: Duration) -> [(socket: Int32, headersIn: Bool)] {
        var late: [(socket: Int32, headersIn: Bool)] = []
        for (key, entry) in entries where entry.waiting && now - entry.since > limit + entry.allowance {
            late.append((entry.socket, entry.headersIn))
            update(key) { $0.waiting = false }
        }
        return late
    }

    /// The oldest waiting connection of the address holding the most open
    /// connections (not `key`, the new one), no longer counted as waiting.
    private mutating func makeRoom(sparing key: UInt) -> Int32? {
        guard let heaviest = perAddress.max(by: { $0.value < $1.value })?.key else { return nil }
        return oldestWaiting(of: heaviest, sparing: key)
    }

    /// The oldest connection of `address` waiting for a request (not `key`),
    /// no longer counted as waiting: its socket, to shut down.
    private mutating func oldestWaiting(of address: String, sparing key: UInt) -> Int32? {
        var oldest: (key: UInt, since: Duration)?
        for (candidate, entry) in entries where candidate != key && entry.waiting && entry.address == address {
            if oldest.map({ entry.since < $0.since }) ?? true { oldest = (candidate, entry.since) }
        }
        guard let chosen = oldest, let entry = entries[chosen.key] else { return nil }
        update(chosen.key) { $0.waiting = false }
        return entry.socket
    }
}
