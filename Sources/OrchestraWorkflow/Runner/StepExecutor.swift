import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP

/// Runs one step: renders its request from the variables and its dependencies' captures,
/// sends it (each attempt within the step's timeout and its host's limit, retried as the step
/// says), checks the status and reads the captures. What happened is written to `records`
/// as it happens, so a step cut short still reports its URL, attempts and times.
struct StepExecutor<C: Clock>: Sendable where C.Duration == Duration {
    let workflow: Workflow
    let plain: HTTPCoordinator
    let authenticated: HTTPCoordinator?
    let hosts: HostLimiter
    let clock: C
    let start: C.Instant
    let records: Locked<[String: StepReport]>
    /// Where a step says it started, and a `for_each` step how far it is.
    let emit: @Sendable (WorkflowEvent) -> Void

    /// Statuses worth another attempt when the step does not expect them.
    static func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || (500...599).contains(status)
    }

    func elapsed() -> Duration {
        start.duration(to: clock.now)
    }

    /// Runs `step`; returns its captures (for a `for_each` step, each an array with a value per
    /// element).
    ///
    /// - Throws: ``StepFailure`` saying why the step failed; `CancellationError` when the run
    ///   is cancelled (or stops at another step's failure).
    func run(_ step: WorkflowStep, inputs: NodeInputs) async throws -> [String: JSONValue] {
        emit(.started(step: step.id))
        return try await tracked(step, id: step.id) {
            var values = TemplateValues(variables: workflow.variables)
            for dependency in step.dependencies {
                values.captures[dependency] = try inputs.value(of: dependency, as: [String: JSONValue].self)
            }
            if let reference = step.forEach { return try await fanOut(step, over: reference, values: values) }
            return try await perform(step, id: step.id, values: values)
        }
    }

    /// Runs `body` as the report `id` (a step, or an element `step[3]`): created when it
    /// starts, marked succeeded, failed or cancelled when it ends.
    func tracked(
        _ step: WorkflowStep, id: String, _ body: () async throws -> [String: JSONValue]
    ) async throws -> [String: JSONValue] {
        let isFanOut = id == step.id && step.forEach != nil
        // A for_each step has no single URL: its report shows the template, variables filled in.
        let url = isFanOut ? step.request.url.substitutingVariables(workflow.variables, for: .url) : step.request.url.source
        records.withLock {
            $0[id] = StepReport(
                id: id, state: .failed, method: step.request.method.rawValue, url: url, started: elapsed(), items: isFanOut ? [] : nil
            )
        }
        do {
            let captures = try await body()
            let ended = elapsed()
            update(id) { report in
                report.state = .succeeded
                report.ended = ended
                report.captures = step.captures.map { JSONValue.Member($0.name, captures[$0.name]!) }
            }
            return captures
        } catch {
            let ended = elapsed()
            update(id) { report in
                report.ended = ended
                if error is CancellationError {
                    report.state = .cancelled
                    report.error = "cancelled"
                } else {
                    report.error = "\(error)"
                }
            }
            throw error
        }
    }

    func update(_ id: String, _ change: (inout StepReport) -> Void) {
        records.withLock { records in
            if records[id] != nil { change(&records[id]!) }
        }
    }

    /// Sends the request of `step` (or of one of its elements, reported as `id`) with
    /// `values`, checks the status and reads the captures.
    func perform(_ step: WorkflowStep, id: String, values: TemplateValues) async throws -> [String: JSONValue] {
        let rendered = try RenderedRequest(step.request, values: values)
        update(id) { $0.url = rendered.url }
        let result = try await send(rendered, for: step, id: id)
        let status = result.status.code
        var reader = ResponseReader(result)
        guard step.accepts(status: status) else {
            throw StepFailure("expected \(step.expectationText), got \(status): \(reader.snippet)\(attemptsNote(id))")
        }
        guard !step.captures.isEmpty else { return [:] }
        // One message for every capture a body that is not JSON defeats.
        if step.captures.contains(where: \.readsBody), reader.document() == nil {
            let names = step.captures.filter(\.readsBody).map(\.name).joined(separator: ", ")
            throw StepFailure("the response\(reader.typeNote) is not JSON, so the captures \(names) cannot be read: \(reader.snippet)")
        }
        var captures: [String: JSONValue] = [:]
        for capture in step.captures {
            do {
                captures[capture.name] = try reader.value(of: capture.source)
            } catch {
                throw StepFailure("capture '\(capture.name)': \(error.reason)")
            }
        }
        return captures
    }

    /// Sends with the step's retries, each attempt holding a host slot and limited by the
    /// step's timeout. A retried status that never turned good is returned, not thrown.
    private func send(_ rendered: RenderedRequest, for step: WorkflowStep, id: String) async throws -> HTTPResult {
        let coordinator = step.usesAuth ? authenticated ?? plain : plain
        let policy = RetryPolicy(
            maxAttempts: step.retry.attempts, initialDelay: step.retry.backoff, multiplier: 2,
            maxDelay: max(.seconds(30), step.retry.backoff), jitter: 0,
            isRetryable: { error in !(error is StepFailure || error is AuthenticationError || error is CancellationError) },
            serverDelay: { ($0 as? RetryableStatus)?.retryAfter }
        )
        let clock = clock
        do {
            return try await withRetry(policy, clock: clock) {
                try await hosts.withSlot(for: rendered.authority) {
                    let now = elapsed()
                    update(id) { report in
                        report.attempts += 1
                        if report.firstSent == nil { report.firstSent = now }
                    }
                    let result = try await withTimeout(step.timeout, clock: clock) {
                        try await coordinator.data(for: rendered.request, body: rendered.body)
                    }
                    let status = result.status.code
                    update(id) { $0.status = status }
                    if !step.accepts(status: status), Self.isRetryable(status: status) {
                        throw RetryableStatus(result: result)
                    }
                    return result
                }
            }
        } catch let error as RetryableStatus {
            return error.result
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw StepFailure(StepErrors.describe(error, authority: rendered.authority) + attemptsNote(id), url: rendered.url)
        }
    }

    private func attemptsNote(_ id: String) -> String {
        let attempts = records.withLock { $0[id]?.attempts ?? 0 }
        return attempts > 1 ? " (after \(attempts) attempts)" : ""
    }
}

/// A status the step may retry, with the server's `Retry-After` (seconds or an HTTP date).
struct RetryableStatus: Error, Sendable {
    var result: HTTPResult

    var retryAfter: Duration? { HTTPCoordinator.retryAfter(result.response) }
}
