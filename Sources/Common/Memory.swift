import CMalloc

/// The process's use of glibc's allocator: the one place that calls it.
package enum Memory {
    /// At most two malloc arenas. glibc gives threads that allocate at once
    /// arenas of their own, up to eight per core; a service's many threads
    /// (HTTP, Kafka, the task pool, blocking store calls) each kept freed
    /// pages of a large digest run or list in its own arena, and the
    /// notifier's resident memory rose with every run. Call first thing in
    /// `main`, before any thread starts.
    package static func limitArenas() {
        _ = mallopt(M_ARENA_MAX, 2)
    }

    /// Gives freed pages back to the system, after work that allocated much
    /// and is done (a digest run): resident memory stays flat between runs.
    package static func releaseFreePages() {
        _ = malloc_trim(0)
    }
}
