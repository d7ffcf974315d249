import CMalloc

/// The process's use of glibc's allocator: the one place that calls it.
package enum Memory {
    /// At most `count` malloc arenas. glibc gives threads that allocate at
    /// once arenas of their own, up to eight per core; the notifier's many
    /// threads (HTTP, Kafka, the task pool, blocking store calls) each kept
    /// freed pages of a large digest run or list in its own arena, and its
    /// resident memory rose with every run: it keeps 2. The ingest allocates
    /// only small, short-lived values, but on every thread of a request's
    /// path at once: with 2 arenas they queued for the arena locks, and 8
    /// cost 6-10 % less CPU a POST at the same peak memory (docs/performance.md,
    /// "Performance"). Call first thing in `main`, before any thread starts.
    package static func limitArenas(to count: Int) {
        _ = mallopt(M_ARENA_MAX, Int32(count))
    }

    /// Blocks of `bytes` or more get pages of their own, given back when
    /// freed. glibc raises this threshold (up to 32 MiB) each time such a
    /// block is freed, so a digest run's big arrays and strings came from
    /// the arenas after the first one and left them fragmented: a school of
    /// 40,000 records peaked at 201 MiB resident with the default, 189 with
    /// 128 KiB fixed (`scripts/memory-day --schools 1 --seconds 20`,
    /// docs/performance.md).
    package static func mapBlocks(largerThan bytes: Int) {
        _ = mallopt(M_MMAP_THRESHOLD, Int32(bytes))
    }

    /// Gives freed pages back to the system, after work that allocated much
    /// and is done (a digest run, reading a district's roster): resident
    /// memory stays flat between runs and reflects what is kept.
    package static func releaseFreePages() {
        _ = malloc_trim(0)
    }
}
