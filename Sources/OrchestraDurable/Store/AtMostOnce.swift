/// What the stores write when a job with ``DurableJobOptions/atMostOnce`` ends
/// ``DurableJobState/uncertain``: one wording for every store.
package enum AtMostOnce {
    /// The outcome named in the errors of the jobs it skips or cancels.
    package static let outcome = "may have been sent (uncertain)"

    /// The error of a job whose `worker` lost its lease (it died or stalled) during `attempt`.
    package static func leaseLost(worker: String?, attempt: Int) -> String {
        "may have been sent: worker '\(worker ?? "unknown")' lost its lease during attempt \(attempt) "
            + "(it stopped or stalled), and the job runs at most once, so it is not run again"
    }

    /// The error of a job that `worker` gave back after its handler started `attempt`.
    package static func givenBack(worker: String, attempt: Int) -> String {
        "may have been sent: worker '\(worker)' stopped during attempt \(attempt), after it had started, "
            + "and the job runs at most once, so it is not run again"
    }
}

/// A store that tells the queues of this process when a lease that ended (expired in a claim,
/// or given back) made a job ``DurableJobState/uncertain``: no worker records an outcome for
/// it, so nothing else wakes ``DurableQueue/withOutcomes(of:_:)``. ``SQLiteJobStore`` does; a
/// shared store tells every process through its ``WorkSignal`` instead.
package protocol LeaseEndingNotices: Sendable {
    /// Calls `onEnded` after each transaction in which a lease that ended made a job uncertain,
    /// until the calling task is cancelled; and once when listening begins, so that what
    /// happened before is looked for then.
    func listenForLeaseEndings(_ onEnded: @escaping @Sendable () -> Void) async throws
}
