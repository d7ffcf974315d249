/// Runs an inline route's handler (`Router.Runs.inline`, the produce path)
/// on whichever thread lets it go on: it starts on libmicrohttpd's thread
/// (`Task.immediate`), and after a wait it continues on the thread that
/// ended the wait — the Kafka producer's poll thread for an
/// acknowledgement, a Dispatch thread after `blocking` (never a doorbell's
/// ringer: a doorbell's waiters wake on Swift's pool) — which then resumes
/// the connection. A registration thus crosses
/// threads twice, as a C server's would (libmicrohttpd → poll thread →
/// libmicrohttpd), instead of four times with Swift's pool in between; a
/// handler that never waits answers before its connection is suspended
/// (docs/design.md, "Where a request runs"; its measure in
/// docs/performance.md).
///
/// What this asks of the code a handler waits on, kept throughout: resume a
/// continuation after releasing any lock (the handler runs inside `resume`),
/// and keep long work off the threads others wait on: after the broker's
/// acknowledgement a registration only builds and queues its answer, and a
/// handler with more to do does it in `blocking`, on whose Dispatch thread it
/// then goes on.
final class InlineExecutor: TaskExecutor {
    static let shared = InlineExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        job.runSynchronously(on: asUnownedTaskExecutor())
    }
}
