/// Runs a request's handler on whichever thread lets it go on: it starts on
/// libmicrohttpd's thread (`Task.immediate`), and after a wait it continues
/// on the thread that ended the wait — the Kafka producer's poll thread for
/// an acknowledgement, a Dispatch thread after `blocking`, a ringer of a
/// doorbell — which then resumes the connection. A registration thus crosses
/// threads twice, as a C server's would (libmicrohttpd → poll thread →
/// libmicrohttpd), instead of four times through Swift's pool, whose
/// hand-overs were a fifth of the ingest's CPU under load
/// (docs/performance.md).
///
/// What this asks of the code a handler waits on, kept throughout: resume a
/// continuation after releasing any lock (the handler runs inside `resume`),
/// and do not block a thread that others wait on for long after a resume
/// (what a handler does after its last wait is build and queue its answer).
final class InlineExecutor: TaskExecutor {
    static let shared = InlineExecutor()

    func enqueue(_ job: consuming ExecutorJob) {
        job.runSynchronously(on: asUnownedTaskExecutor())
    }
}
