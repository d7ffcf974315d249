import Dispatch
import Foundation

extension Array {
    /// Consecutive runs of at most `size` elements, in order.
    public func chunks(of size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}

extension Array where Element: Sendable {
    /// `map` with one slice of the elements per core, for CPU-bound work on
    /// a blocking thread (rendering a school's digests). Order is kept.
    public func concurrentMap<T: Sendable>(_ transform: @Sendable (Element) -> T) -> [T] {
        let slices = Swift.min(count, ProcessInfo.processInfo.activeProcessorCount)
        guard slices > 1 else { return map(transform) }
        return [T](unsafeUninitializedCapacity: count) { buffer, initialized in
            // Each slot is written by one slice only.
            nonisolated(unsafe) let base = buffer.baseAddress!
            DispatchQueue.concurrentPerform(iterations: slices) { slice in
                for index in stride(from: slice, to: count, by: slices) {
                    (base + index).initialize(to: transform(self[index]))
                }
            }
            initialized = count
        }
    }
}
