import Foundation
import HTTPTypes
import Orchestra
import OrchestraDurableHTTP
import OrchestraHTTP

/// Runs one step: renders its request from the variables and its dependencies' captures,
/// sends it through the run's coordinator (which applies the limits, the step's timeout,
/// retries and redirect policy, and the auth block), checks the status and reads the
/// captures. What happened is written to `records` as it happens, so a step cut short still
/// reports its URL, attempts and times.
struct StepExecutor<C: Clock>: Sendable where C.Duration == Duration {
    let workflow: Workflow
    let coordinator: HTTPCoordinator
    /// Sent as `User-Agent` unless the step sets one.
    let userAgent: String?
    /// The run's cookie jar; `nil` when the workflow turns cookies off.
    let cookies: CookieJar?
    /// The row of a data-driven run (`{{data.COLUMN}}`); empty otherwise.
    let row: [String: String]
    /// Whether a `for_each` step keeps every element's report (for `--output json` and
    /// traces), or only those of elements that did not succeed, so memory stays flat.
    let keepsItemReports: Bool
    let clock: C
    let start: C.Instant
    let records: Locked<[String: StepReport]>
    /// The `--state` file: requests it records as succeeded are not sent again, and every
    /// request's outcome is recorded in it. `nil` for a run kept in memory only.
    let state: WorkflowState?
    /// `--resend-uncertain`: send again the requests an earlier run may have sent.
    let resendsUncertain: Bool
    /// Where a step says it started, and a `for_each` step how far it is.
    let emit: @Sendable (WorkflowEvent) -> Void
    /// How long the regular expressions run on one response may work together (``BoundedRegex``),
    /// unless the step's `timeout` is shorter.
    var regexTimeLimit = BoundedRegex.defaultTimeLimit
    /// Told of each retry's wait, with the label of the step or element (`--verbose`).
    var onRetry: (@Sendable (_ label: String, HTTPRetryEvent) -> Void)? = nil
    /// What becomes of response bodies: the most held in memory, and whether a body nothing
    /// reads is held all the same (`--verbose` shows it).
    var bodies = ResponseBodyOptions()
    /// The files `save_to:` wrote in this run, with the step or element that wrote each: a
    /// second write of one path is refused rather than losing the first.
    let savedPaths = Locked<[String: String]>([:])
    /// The steps skipped by a `when:` (theirs or a dependency's): their dependents are skipped too.
    let conditionSkips = Locked<Set<String>>([])
    /// Told of each attempt of an `until:` poll, with the wait before the next (`nil`: none).
    var onPoll: (@Sendable (_ label: String, PollAttempt, _ next: Duration?) -> Void)? = nil
    /// The `paginate:` steps whose items go straight to a `for_each` step as pages arrive.
    var pageStreams = PageStreams()

    func elapsed() -> Duration {
        start.duration(to: clock.now)
    }

    /// Runs `step`; returns its captures (for a `for_each` step, each an array with a value per
    /// element).
    ///
    /// - Throws: ``StepFailure`` saying why the step failed; `CancellationError` when the run
    ///   is cancelled (or stops at another step's failure).
    func run(_ step: WorkflowStep, inputs: NodeInputs) async throws -> [String: JSONValue] {
        if step.when != nil || !conditionSkips.withLock(\.isEmpty), try await skipsByCondition(step, inputs: inputs) {
            return [:]
        }
        emit(.started(step: step.id))
        // A paginate step is recorded as one request (item -1) once its last page is read, with
        // its items: a resume reads them from the file instead of sending the pages again.
        return try await tracked(step, id: step.id, item: step.forEach == nil ? -1 : nil) {
            var values = TemplateValues(variables: workflow.variables, environment: workflow.environment)
            values.cookieJar = step.usesCookies ?? workflow.usesCookies ? cookies : nil
            values.data = row
            let streamed = pageStreams.byConsumer[step.id]
            for dependency in step.dependencies where dependency != streamed?.producer {
                values.captures[dependency] = try inputs.value(of: dependency, as: [String: JSONValue].self)
            }
            if let streamed { return try await fanOut(step, streamedFrom: streamed, values: values) }
            if let reference = step.forEach { return try await fanOut(step, over: reference, values: values) }
            if let state {
                let record: StateRecord?
                do {
                    record = try await state.record(step: step.id)
                } catch let error as WorkflowStateError {
                    throw StepFailure("--state: \(error)")
                }
                if let captures = try resume(step, id: step.id, record: record) { return captures }
            }
            if let pagination = step.paginate { return try await paginate(step, pagination, values: values) }
            return try await perform(step, id: step.id, item: -1, values: values)
        }
    }

    /// Runs `body` as the report `id` (a step, or an element `step[3]`): created when it
    /// starts, marked succeeded, failed or cancelled when it ends; with a `--state` file, the
    /// outcome of request `item` (-1 for the step's own, `nil` for a `for_each` step) is
    /// recorded.
    func tracked(
        _ step: WorkflowStep, id: String, item: Int?, _ body: () async throws -> [String: JSONValue]
    ) async throws -> [String: JSONValue] {
        let isFanOut = id == step.id && (step.forEach != nil || step.paginate != nil)
        // A for_each step has no single URL: its report shows the template, variables filled in.
        let url =
            isFanOut ? step.request.url.substitutingVariables(workflow.variables, for: .url) : step.request.url.source
        records.withLock {
            $0[id] = StepReport(
                id: id, state: .failed, method: step.request.method.rawValue, url: url, started: elapsed(),
                items: isFanOut ? [] : nil
            )
        }
        do {
            let captures = try await body()
            let ended = elapsed()
            update(id) { report in
                report.state = .succeeded
                report.ended = report.ended ?? ended
                // A for_each capture nothing reads is not kept (``keptCaptures(of:)``): null here.
                report.captures = step.captures.map { JSONValue.Member($0.name, captures[$0.name] ?? .null) }
            }
            if let item { recordOutcome(step, id: id, item: item, captures: captures) }
            return captures
        } catch {
            let ended = elapsed()
            update(id) { report in
                report.ended = report.ended ?? ended
                if error is CancellationError {
                    report.state = .cancelled
                    report.error = "cancelled"
                } else {
                    report.error = "\(error)"
                }
            }
            if let item { recordOutcome(step, id: id, item: item, captures: nil) }
            throw error
        }
    }

    func update(_ id: String, _ change: (inout StepReport) -> Void) {
        records.withLock { records in
            // One lookup, and the report changed in place: `records[id] != nil` copied it.
            guard let index = records.index(forKey: id) else { return }
            change(&records.values[index])
        }
    }

    /// Sends the request of `step` (or of one of its elements, reported as `id`, whose index
    /// is `item`) with `values`, checks the status and reads the captures. With a `--state`
    /// file, a request that is not safe to send twice is recorded as being sent once it has
    /// its slot, before it goes out.
    func perform(
        _ step: WorkflowStep, id: String, item: Int, values: TemplateValues, attempt: AttemptHooks = AttemptHooks()
    ) async throws -> [String: JSONValue] {
        if let until = step.until { return try await poll(step, until, id: id, item: item, values: values) }
        var rendered = try RenderedRequest(step.request, values: values, basicAuth: workflow.basicAuth)
        if let userAgent, rendered.request.headerFields[.userAgent] == nil {
            rendered.request.headerFields[.userAgent] = userAgent
        }
        update(id) { $0.url = rendered.url }
        let context = ExchangeContext(label: id, cookies: values.cookieJar)
        var handling = HTTPResponseBodyHandling(
            maximumSize: step.maxBody ?? bodies.maximumSize, decompresses: step.compressed)
        var file: FileSink?
        var counter: CountingSink?
        let readsBody = step.readsResponseBody(auth: workflow.auth)
        if let saveTo = step.saveTo {
            let path = try saveTo.render(for: .text, with: values)
            let writer = savedPaths.withLock { paths -> String? in
                if let writer = paths[path] { return writer }
                paths[path] = id
                return nil
            }
            if let writer {
                throw StepFailure("save_to: '\(short: path)' was written by \(writer) in this run already")
            }
            // A step that also reads the body (a capture, an assertion) keeps it in memory too.
            file = try FileSink(
                path: path, relativeTo: bodies.directory, keepingUpTo: readsBody ? handling.maximumSize : nil)
            handling.sink = file
        } else if !bodies.holdsUnread, !readsBody {
            counter = CountingSink()
            handling.sink = counter
        }
        // On a durable transport, the request's job is named after the step or element: a resume
        // finds it by what it is, not by its bytes; one not safe to send twice runs at most once.
        var result: HTTPResult
        do {
            result = try await ExchangeContext.$current.withValue(context) {
                try await DurableHTTPTransport.withJobName(
                    attempt.jobSuffix.isEmpty ? id : id + attempt.jobSuffix, atMostOnce: !step.resendsOnResume
                ) {
                    try await send(rendered, for: step, id: id, item: item, body: handling)
                }
            }
        } catch {
            file?.discard()
            throw error
        }
        if let counter {
            let (bytes, start) = counter.counted
            result.body = start
            update(id) { $0.bodyBytes = bytes }
        }
        let status = result.status.code
        attempt.onResponse?(result.response)
        if let file {
            guard step.accepts(status: status) else {
                file.discard()
                throw StepFailure(
                    "expected \(step.expectationText), got \(status)\(attemptsNote(id)); nothing was saved")
            }
            let saved = try file.commit()
            update(id) { $0.saved = saved }
            if file.keepsUpTo != nil { result.body = file.keptBody }
        }
        var reader = ResponseReader(result, regexLimit: min(regexTimeLimit, step.timeout))
        // The coordinator re-sent the request with fresh tokens and gave up: the last response
        // still refuses the token, whatever its status (`failure: { status: [200] }`).
        // (A redirect to another origin carried no token: its refusal is a status like any other.)
        if step.usesAuth, let auth = workflow.auth, !result.leftOrigin(of: rendered.request),
            auth.isFailure(status: status, body: reader.bodyText.text)
        {
            throw StepFailure(
                "the server still refused the token after it was refreshed (status \(status) matches the auth block's failure rule): \(reader.snippet)"
            )
        }
        guard step.accepts(status: status) else {
            throw StepFailure.check(
                "expected \(step.expectationText), got \(status): \(reader.snippet)\(attemptsNote(id))")
        }
        // A page of a paginate step: its items and where the next page is.
        if let readingPage = attempt.readingPage { try readingPage(&reader, rendered.request) }
        guard !step.assertions.isEmpty || !step.captures.isEmpty else { return [:] }
        guard step.usesRegex else { return try checkAndCapture(step, id: id, reader: &reader, values: values) }
        // A regular expression works on a thread of the concurrency pool for up to its bound:
        // at most all but one of them do at once, so the task that handles Ctrl-C always has a
        // thread to run on. The bound starts once the permit is held.
        return try await BoundedRegex.workers.withPermit {
            var reader = ResponseReader(result, regexLimit: min(regexTimeLimit, step.timeout))
            return try checkAndCapture(step, id: id, reader: &reader, values: values)
        }
    }

    /// Checks the assertions of `step` on the response `reader` reads, then reads its captures.
    private func checkAndCapture(
        _ step: WorkflowStep, id: String, reader: inout ResponseReader, values: TemplateValues
    ) throws -> [String: JSONValue] {
        if !step.assertions.isEmpty {
            try check(step.assertions, id: id, reader: &reader, values: values)
        }
        guard !step.captures.isEmpty else { return [:] }
        // One message for every capture a body that is not JSON defeats.
        if step.captures.contains(where: \.readsBody), reader.document() == nil {
            let names = step.captures.filter(\.readsBody).map(\.name).joined(separator: ", ")
            throw StepFailure.check(
                "the response\(reader.typeNote) \(reader.notJSON), so the captures \(short: names) cannot be read: \(reader.snippet)"
            )
        }
        var captures: [String: JSONValue] = [:]
        for capture in step.captures {
            do {
                captures[capture.name] = try reader.value(of: capture.source)
            } catch {
                if error.isCancellation { throw CancellationError() }
                throw StepFailure.check("capture '\(short: capture.name)': \(error.reason)")
            }
        }
        return captures
    }

    /// Evaluates `assertions` on the response, records every result in the report `id`, and
    /// fails the step listing every check that did not pass.
    private func check(
        _ assertions: [Assertion], id: String, reader: inout ResponseReader, values: TemplateValues
    ) throws {
        let duration = records.withLock { records -> Duration? in
            guard let report = records[id], let sent = report.attemptSent, let ended = report.ended else { return nil }
            return ended - sent
        }
        let results = AssertionEvaluator(values: values, duration: duration).evaluate(assertions, reader: &reader)
        // A `matches:` or `schema:` check stopped by a cancellation was not made: the step is cancelled.
        if results.contains(where: { ["matches", "schema"].contains($0.operatorName) && $0.reason == "cancelled" }) {
            throw CancellationError()
        }
        update(id) { $0.assertions = results }
        let failed = results.filter { !$0.passed }
        guard failed.isEmpty else {
            let list = failed.map(\.description).joined(separator: "; ")
            throw StepFailure.check("\(failed.count) of \(results.count) assertions failed: \(list)")
        }
    }

    /// Sends through the coordinator with the step's retries, timeout, redirect policy and
    /// auth; each attempt's times are recorded while it holds its slot, so the report never
    /// shows more requests in flight than the limits allow. A retried status that never turned
    /// good is returned, not thrown.
    private func send(
        _ rendered: RenderedRequest, for step: WorkflowStep, id: String, item: Int, body: HTTPResponseBodyHandling
    ) async throws -> HTTPResult {
        let follows = step.followRedirects ?? workflow.followRedirects
        var options = HTTPRequestOptions(
            retry: HTTPRetry(
                policy: RetryPolicy(
                    maxAttempts: step.retry.attempts, initialDelay: step.retry.backoff, multiplier: 2,
                    maxDelay: RetrySettings.maximumBackoff, maximumServerDelay: step.retry.maxDelay, jitter: 0
                ),
                statuses: retryableStatuses.subtracting(step.expect), methods: .all
            ),
            timeout: step.timeout,
            redirects: follows ? .follow(maxHops: Workflow.maxRedirects) : .never,
            isAuthenticated: step.usesAuth,
            onAttempt: { event in
                let now = elapsed()
                switch event {
                case .started:
                    update(id) { report in
                        report.attempts += 1
                        report.attemptSent = now
                        if report.firstSent == nil { report.firstSent = now }
                    }
                case .ended(_, let outcome):
                    update(id) { report in
                        report.ended = now
                        if case .success(let response) = outcome { report.status = response.status.code }
                    }
                }
            },
            willSend: intent(for: step, id: id, item: item, url: rendered.url),
            onRetry: retryReport(id),
            credentialFields: secretFields(of: rendered.request)
        )
        options.responseBody = body
        do {
            let result = try await coordinator.data(for: rendered.request, content: rendered.body, options: options)
            update(id) { report in
                report.redirects = result.redirects
                report.attempts = Self.attempts(sends: report.attempts, followedRedirects: result.redirects.count)
            }
            return result
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as HTTPJobUncertainError {
            update(id) { $0.maybeSent = true }
            throw StepFailure(
                StepErrors.maybeSent(method: error.method, stopped: "its worker"), url: rendered.url)
        } catch {
            if let error = error as? HTTPRedirectError {
                // A redirect too many is in `hops` but was not followed.
                let followed = error.code == .tooManyRedirects ? error.hops.count - 1 : error.hops.count
                update(id) { report in
                    report.redirects = error.hops
                    report.attempts = Self.attempts(sends: report.attempts, followedRedirects: followed)
                }
            }
            throw StepFailure(
                StepErrors.describe(error, authority: rendered.authority) + attemptsNote(id), url: rendered.url)
        }
    }

    /// ``onRetry`` for the report `id`.
    private func retryReport(_ id: String) -> (@Sendable (HTTPRetryEvent) -> Void)? {
        guard let onRetry else { return nil }
        return { event in onRetry(id, event) }
    }

    /// The header fields of `request` that hold a secret (`secrets:`): credentials the
    /// coordinator drops on a redirect to another origin, like `Authorization`.
    private func secretFields(of request: HTTPRequest) -> Set<HTTPField.Name> {
        let secrets = workflow.secretValues.filter { !$0.isEmpty }
        guard !secrets.isEmpty else { return [] }
        var fields: Set<HTTPField.Name> = []
        for field in request.headerFields where secrets.contains(where: { field.value.contains($0) }) {
            fields.insert(field.name)
        }
        return fields
    }

    /// Attempts of a request as its report counts them: a send retried, not a redirect
    /// followed (every hop is a send of its own).
    private static func attempts(sends: Int, followedRedirects: Int) -> Int {
        max(1, sends - followedRedirects)
    }

    private func attemptsNote(_ id: String) -> String {
        let attempts = records.withLock { $0[id]?.attempts ?? 0 }
        return attempts > 1 ? " (after \(attempts) attempts)" : ""
    }
}

/// What a step that sends its request more than once (an `until:` poll, the pages of a
/// `paginate:` step) asks of one send of ``StepExecutor/perform(_:id:item:values:attempt:)``.
struct AttemptHooks {
    /// After the step's or element's label in its job name on a durable transport: empty for
    /// the first attempt of a poll (the name of a step without `until:`), `~poll2`, `~poll3`…,
    /// so that a later attempt never reads an earlier one's stored response back (a coordinator
    /// started again replays the stored attempts in order, then sends on).
    var jobSuffix = ""
    /// Told of the response as it came, before any check (a poll reads its `Retry-After`).
    var onResponse: ((HTTPResponse) -> Void)?
    /// Reads a page's items and next page once its status is accepted.
    var readingPage: ((inout ResponseReader, _ sent: HTTPRequest) throws -> Void)?
}

/// What becomes of the run's response bodies.
package struct ResponseBodyOptions: Sendable {
    /// The most bytes of a body held in memory (decoded), unless a step says `max_body:`:
    /// `--max-body`, 64 MB by default.
    package var maximumSize: Int
    /// Whether a body nothing reads is held all the same (for `--verbose`); otherwise it is
    /// counted and dropped as it arrives.
    package var holdsUnread: Bool
    /// Where relative `save_to:` paths start: the current directory by default.
    package var directory: URL

    package init(
        maximumSize: Int = 64 << 20, holdsUnread: Bool = false,
        directory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
    ) {
        self.maximumSize = maximumSize
        self.holdsUnread = holdsUnread
        self.directory = directory
    }
}

extension WorkflowStep {
    /// Whether something reads the response's body: a capture, an assertion, or the auth
    /// block's failure rule.
    func readsResponseBody(auth: WorkflowAuth?) -> Bool {
        !captures.isEmpty || !assertions.isEmpty || (usesAuth && auth != nil) || paginate != nil
    }

    /// Whether the step runs a regular expression on its response: a `regex:` capture, a
    /// `matches:` check or a `schema:` check (its patterns, and work that may take as long).
    var usesRegex: Bool {
        captures.contains { if case .regex = $0.source { true } else { false } }
            || assertions.contains { $0.checks.contains(where: \.usesRegex) }
    }
}

/// Statuses a step's `retry` retries when its `expect` does not list them.
private let retryableStatuses: Set<Int> = Set([408, 429]).union(500...599)
