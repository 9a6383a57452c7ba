import HTTPTypes
import Orchestra
import OrchestraHTTP

extension StepExecutor {
    /// Sends the request of `step` (reported as `id`, element `item`) until its checks hold,
    /// as its `until:` says (``StepPoll``): each attempt is `perform`
    /// with the step's retries and what is left of its timeout, which bounds the whole poll;
    /// between attempts it waits on the run's clock, holding no slot of the run's `limit` (the
    /// coordinator's slot is per request). A response that does not pass the checks (status,
    /// `assert:`, captures) is polled again; any other failure ends the poll at once. Each
    /// attempt is in the report (``StepReport/polls``) and told to ``onPoll``.
    ///
    /// - Throws: ``StepFailure`` naming the last failed check and the number of attempts when
    ///   `max_attempts` or the timeout ends the poll; `CancellationError` when cancelled (a
    ///   wait ends at once).
    func poll(
        _ step: WorkflowStep, _ poll: StepPoll, id: String, item: Int, values: TemplateValues
    ) async throws -> [String: JSONValue] {
        let deadline = clock.now.advanced(by: step.timeout)
        var attempt = step
        attempt.until = nil
        var number = 0
        while true {
            number += 1
            attempt.timeout = min(step.timeout, clock.now.duration(to: deadline))
            let sent = elapsed()
            let response = Locked<HTTPResponse?>(nil)
            // Each attempt counts its own sends (its messages say `after 2 attempts` for its
            // retries, not for the polls before it); the report adds them up.
            let before = records.withLock { records -> Int in
                guard let index = records.index(forKey: id) else { return 0 }
                defer { records.values[index].attempts = 0 }
                records.values[index].assertions = []
                return records.values[index].attempts
            }
            let outcome: Result<[String: JSONValue], any Error>
            do {
                // On a durable transport each attempt is a job of its own (`job~poll2#1`): under
                // one name a later attempt would read the first one's stored response back.
                let hooks = AttemptHooks(
                    jobSuffix: number == 1 ? "" : "~poll\(number)",
                    onResponse: { received in response.withLock { $0 = received } }
                )
                outcome = .success(try await perform(attempt, id: id, item: item, values: values, attempt: hooks))
            } catch {
                outcome = .failure(error)
            }
            update(id) { $0.attempts += before }
            do {
                let captures = try outcome.get()
                let record = recordPoll(id, number: number, at: sent, failure: nil)
                onPoll?(id, record, nil)
                return captures
            } catch let failure as StepFailure where failure.isCheck {
                let record = recordPoll(id, number: number, at: sent, failure: failure.message)
                let tried = number == 1 ? "1 attempt" : "\(number) attempts"
                if let maximum = poll.maxAttempts, number >= maximum {
                    onPoll?(id, record, nil)
                    throw StepFailure(
                        "until: the checks still failed after \(tried) (max_attempts: \(maximum)); last: \(failure.message)",
                        url: failure.url)
                }
                let delay = nextDelay(poll, after: number, response: response.withLock { $0 })
                // A wait that would end when the timeout has is not started: the poll ends now.
                guard clock.now.advanced(by: delay) < deadline else {
                    onPoll?(id, record, nil)
                    throw StepFailure(
                        "until: the checks still failed after \(tried); the next would start after the step's timeout (\(StepErrors.format(step.timeout)) over the whole poll); last: \(failure.message)",
                        url: failure.url)
                }
                onPoll?(id, record, delay)
                try await clock.sleep(for: delay)
            } catch let failure as StepFailure where number > 1 && clock.now >= deadline {
                throw StepFailure(
                    "until: the step's timeout (\(StepErrors.format(step.timeout)) over the whole poll) ended during attempt \(number): \(failure.message)",
                    url: failure.url)
            }
        }
    }

    /// The wait after attempt `number`: the `Retry-After` of its response if it has one (a
    /// `202 Accepted` that says when to look again), at most the poll's longest wait; otherwise
    /// the poll's interval (``StepPoll/delay(after:)``).
    private func nextDelay(_ poll: StepPoll, after number: Int, response: HTTPResponse?) -> Duration {
        guard let response, let asked = HTTPCoordinator.retryAfter(response) else { return poll.delay(after: number) }
        return min(asked, min(poll.maxInterval ?? StepPoll.maximumInterval, StepPoll.maximumInterval))
    }

    /// Adds attempt `number` of a poll, sent at `at`, to the report `id` (the last
    /// ``StepPoll/reportedAttempts`` are kept, all are counted).
    private func recordPoll(_ id: String, number: Int, at: Duration, failure: String?) -> PollAttempt {
        let record = records.withLock { records -> PollAttempt in
            let status = records[id]?.status
            let attempt = PollAttempt(number: number, sent: at, status: status, failure: failure)
            guard let index = records.index(forKey: id) else { return attempt }
            records.values[index].pollCount = number
            if records.values[index].polls.count >= StepPoll.reportedAttempts {
                records.values[index].polls.removeFirst()
            }
            records.values[index].polls.append(attempt)
            return attempt
        }
        return record
    }
}

/// One attempt of an `until:` poll, in a step's report.
package struct PollAttempt: Sendable, Hashable {
    /// From 1.
    package var number: Int
    /// When it started, from the run's start.
    package var sent: Duration
    /// The status of its response, if one came.
    package var status: Int?
    /// Why its checks did not hold; `nil` for the attempt that passed.
    package var failure: String?

    package init(number: Int, sent: Duration, status: Int?, failure: String?) {
        self.number = number
        self.sent = sent
        self.status = status
        self.failure = failure
    }

    /// Whether its checks held.
    package var passed: Bool { failure == nil }
}
