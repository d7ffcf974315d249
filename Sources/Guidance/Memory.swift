#if canImport(Glibc)
// glibc's malloc_trim is not in Swift's Glibc module map.
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
#endif

/// Hands memory freed by a large one-off job (reading a district's roster)
/// back to the system, so resident memory reflects what is kept.
func releaseFreedMemory() {
    #if canImport(Glibc)
    _ = glibcMallocTrim(0)
    #endif
}
