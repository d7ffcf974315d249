extension Array {
    /// Consecutive runs of at most `size` elements, in order.
    package func chunks(of size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
