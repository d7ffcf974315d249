import Dispatch
import Foundation
import Synchronization

extension Array where Element: Sendable {
    /// Hands `body` the transform of each element, in order, on this thread,
    /// while one thread per further core transforms the elements ahead of
    /// it: CPU-bound work (rendering a school's digests) overlapping a serial
    /// consumer (writing them in one transaction). This thread transforms
    /// too whenever nothing is ready for it, so it never waits on a thread
    /// that has not started. When `body` throws, elements not yet started
    /// are skipped. It returns once every helper has stopped: nothing of
    /// the run goes on after it. The array is handed over: each element is released once
    /// transformed, so that what it holds (a school's day of records) is
    /// not kept while its result and later ones are written.
    package consuming func forEach<T: Sendable, E: Error>(
        transformedBy transform: @escaping @Sendable (Element) -> T, _ body: (T) throws(E) -> Void
    ) throws(E) {
        let count = self.count
        let work = TransformQueue(consume self, transform)
        let helpers = Swift.min(count, ProcessInfo.processInfo.activeProcessorCount) - 1
        let stopped = DispatchGroup()
        for _ in 0..<Swift.max(0, helpers) {
            stopped.enter()
            BlockingExecutor.processors.execute {
                while work.transformNext() {}
                stopped.leave()
            }
        }
        defer { stopped.wait() }
        do {
            for index in 0..<count {
                while !work.isDone(index) && work.transformNext() {}
                try body(work.take(index))
            }
        } catch {
            work.skipRest()
            throw error
        }
    }
}

/// The elements of one `forEach(transformedBy:)`: each taken by exactly one
/// thread (a shared counter), its result left in its own slot, and that
/// slot's semaphore signalled. Unchecked: `results` is raw memory; a slot
/// is written only by the thread that took its index, and read only after
/// its semaphore says so.
fileprivate final class TransformQueue<Element: Sendable, T: Sendable>: @unchecked Sendable {
    /// Each element until its transform takes it.
    private let elements: UnsafeMutablePointer<Element?>
    private let count: Int
    private let transform: @Sendable (Element) -> T
    private let next = Atomic(0)
    private let results: UnsafeMutablePointer<T?>
    private let done: [DispatchSemaphore]

    init(_ elements: consuming [Element], _ transform: @escaping @Sendable (Element) -> T) {
        count = elements.count
        self.elements = .allocate(capacity: count)
        for (index, element) in (consume elements).enumerated() { (self.elements + index).initialize(to: element) }
        self.transform = transform
        results = .allocate(capacity: count)
        results.initialize(repeating: nil, count: count)
        done = (0..<count).map { _ in DispatchSemaphore(value: 0) }
    }

    deinit {
        elements.deinitialize(count: count)
        elements.deallocate()
        results.deinitialize(count: count)
        results.deallocate()
    }

    /// Transforms the next element nobody has taken; false when none is left.
    func transformNext() -> Bool {
        let index = next.add(1, ordering: .relaxed).oldValue
        guard index < count else { return false }
        // This thread's alone (the counter gave it the index): released with its transform.
        let element = elements[index]!
        elements[index] = nil
        results[index] = transform(element)
        done[index].signal()
        return true
    }

    /// Whether element `index` is transformed; when it is, `take` returns at once.
    func isDone(_ index: Int) -> Bool {
        guard done[index].wait(timeout: .now()) == .success else { return false }
        done[index].signal()
        return true
    }

    /// Element `index`'s result, waiting for the thread transforming it.
    func take(_ index: Int) -> T {
        done[index].wait()
        // Set by `transformNext` before it signalled: the wait above saw it.
        defer { results[index] = nil }
        return results[index]!
    }

    func skipRest() {
        next.store(count, ordering: .relaxed)
    }
}
