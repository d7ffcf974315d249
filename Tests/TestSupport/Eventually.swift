import Foundation

/// Looks again and again (every `pause`) until what it sees is `done`, or
/// `limit` has passed; returns what it saw last. The tests' one poll: it
/// waits for what no doorbell of theirs can ring (another process, a
/// broker's group, a socket's far end), in real time.
package func eventually<T>(
    within limit: Duration = .seconds(20), every pause: Duration = .milliseconds(50), _ look: () async throws -> T,
    until done: (T) throws -> Bool
) async throws -> T {
    let deadline = ContinuousClock.now + limit
    var seen = try await look()
    while try !done(seen) && ContinuousClock.now < deadline {
        try await Task.sleep(for: pause)
        seen = try await look()
    }
    return seen
}

/// `eventually` for a condition: whether it held within `limit`.
package func eventually(
    within limit: Duration = .seconds(20), every pause: Duration = .milliseconds(50), _ condition: () async throws -> Bool
) async throws -> Bool {
    try await eventually(within: limit, every: pause, condition, until: { $0 })
}
