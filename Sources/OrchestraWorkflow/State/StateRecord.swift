/// What a `--state` file holds for one request: a step's, or one element's of a `for_each`
/// step. Each is written as it happens and replaced by the next record of the same request, so
/// a request has exactly one.
package struct StateRecord: Sendable, Hashable {
    package enum State: String, Sendable {
        /// About to be sent (written, and committed, before a request that is not safe to send
        /// twice goes out). Found by a later run, it means the request may have been sent.
        case sending
        /// Its status was accepted and its captures read: a later run reuses them.
        case succeeded
        /// It failed (a status not expected, a failed assertion, a transport error): a later
        /// run sends it again.
        case failed
        /// Its step was skipped by a `when:` (its own or a dependency's) in the file's last run,
        /// so nothing was to be sent (a step's own record, `item` -1). The next run drops it and
        /// decides again.
        case skipped
    }

    package var state: State
    /// The status of the last response, if one came.
    package var status: Int?
    /// Attempts made by the run that wrote the record.
    package var attempts: Int
    /// The URL sent (templates substituted), as the run shows it: secrets masked, a user
    /// information as `***`. Never a credential.
    package var url: String
    /// Why it failed, as the run shows it (secrets masked).
    package var error: String?
    /// The captured values, by name (a succeeded record), that a resume sends to the steps
    /// using them: in clear, so a capture whose value holds a secret of the run is left out
    /// (and the step sent again on resume).
    package var captures: [String: JSONValue]
    /// The run that wrote it: 1 for the first run with this state file, 2 for the first resume…
    package var run: Int

    package init(
        state: State, status: Int? = nil, attempts: Int = 0, url: String, error: String? = nil,
        captures: [String: JSONValue] = [:], run: Int
    ) {
        self.state = state
        self.status = status
        self.attempts = attempts
        self.url = url
        self.error = error
        self.captures = captures
        self.run = run
    }

    /// What a run does with a request that has this record.
    package enum Decision: Sendable, Hashable {
        /// Send it: no record, a failed one, or one in flight that is safe to send again.
        case send
        /// Do not send it: it succeeded, reuse its record.
        case reuse(StateRecord)
        /// Do not send it: it was in flight when an earlier run stopped and is not safe to send
        /// twice. It is reported as failed, "may have been sent".
        case uncertain(StateRecord)
    }

    /// What to do with a request whose record is `record`, when sending it again after a stop
    /// in flight is safe (`resends`) or not.
    package static func decision(for record: StateRecord?, resends: Bool) -> Decision {
        guard let record else { return .send }
        switch record.state {
        case .succeeded: return .reuse(record)
        case .failed, .skipped: return .send
        case .sending: return resends ? .send : .uncertain(record)
        }
    }

    /// The message of a request reported "may have been sent".
    package static func uncertainMessage(method: String, run: Int) -> String {
        StepErrors.maybeSent(method: method, stopped: "run \(run)")
    }
}
