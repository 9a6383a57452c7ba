import Foundation
import HTTPTypes
import Orchestra

extension StepExecutor {
    /// Sends the request of a `paginate:` step once per page, each page checked like a single
    /// request and reported as `STEP[page N]`, until a page gives no next page (or no items,
    /// for numbered pages) or `max_pages` is reached. The pages' items go to the `for_each`
    /// step that takes them as they arrive (``PageChannel``), or, for any other reader, form
    /// one list captured as `items`. Other captures come from the last page.
    ///
    /// A next page on another origin than the first, or a next URL or cursor an earlier page
    /// already gave (pages that would never end), fails the step.
    func paginate(
        _ step: WorkflowStep, _ pagination: Pagination, values: TemplateValues
    ) async throws -> [String: JSONValue] {
        let channel = pageStreams.byProducer[step.id]
        var values = values
        var outcome = FanOutOutcome(keepsAll: keepsItemReports, keeping: [], count: 0)
        var gathered: [JSONValue] = []
        var captures: [String: JSONValue] = [:]
        var cursor = ""
        var nextURL: String?
        var origin: String?
        // Hashes of the next URLs or cursors given so far: one given twice means a loop.
        var given: Set<Int> = []
        var moreLeft = false
        var consumerLeft = false
        do {
            pages: for number in 1...pagination.maxPages {
                values.page = (number, cursor)
                var pageStep = step
                if let nextURL {
                    // The next URL carries its own query: `{` is not a template here.
                    do {
                        pageStep.request.url = try Template(parsing: nextURL.replacingOccurrences(of: "{", with: "%7B"))
                    } catch {
                        throw StepFailure("paginate: the next page's URL '\(short: nextURL)' cannot be read: \(error)")
                    }
                }
                let id = "\(step.id)[page \(number)]"
                let read = PageRead()
                let result: Result<[String: JSONValue], any Error>
                do {
                    result = .success(
                        try await tracked(step, id: id, item: nil) {
                            try await perform(
                                pageStep, id: id, item: -1, values: values,
                                attempt: AttemptHooks(readingPage: { reader, sent in
                                    try read.read(&reader, sent: sent, pagination: pagination, page: number)
                                }))
                        })
                } catch {
                    result = .failure(error)
                }
                outcome.record(number - 1, result, records.withLock { $0.removeValue(forKey: id) })
                switch result {
                case .success(let values): captures = values
                case .failure(let error) where error is CancellationError: throw CancellationError()
                case .failure(let error): throw StepFailure("page \(number): \(error)")
                }
                if let channel {
                    do {
                        try await channel.send(read.items)
                    } catch is PageChannel.ConsumerGone {
                        // Nothing takes further items: the pages end here.
                        consumerLeft = number < pagination.maxPages
                        break pages
                    }
                } else if pagination.items != nil {
                    gathered.append(contentsOf: read.items)
                }
                if origin == nil { origin = Self.origin(of: read.sent) }
                switch try Self.nextPage(after: read, page: number, of: pagination, origin: origin, given: &given) {
                case nil: break pages
                case .cursor(let next)?: cursor = next
                case .url(let next)?: nextURL = next
                case .number?: break
                }
                moreLeft = number == pagination.maxPages
            }
        } catch {
            let cancelled = error is CancellationError
            channel?.finish(failure: cancelled ? "was cancelled" : "failed: \(error)")
            finishPages(step, outcome: outcome, moreLeft: false)
            if cancelled { throw CancellationError() }
            throw error
        }
        channel?.finish()
        finishPages(step, outcome: outcome, moreLeft: moreLeft)
        if consumerLeft, let channel {
            records.withLock {
                $0[step.id]?.note =
                    "stopped after page \(outcome.counts.total): '\(channel.consumer)', which takes its items, ended"
            }
        }
        if pagination.items != nil, channel == nil { captures[Pagination.itemsName] = .array(gathered) }
        return captures
    }

    /// Where the page after page `number` is: `nil` when it was the last (no next URL or
    /// cursor, or no items for numbered pages).
    ///
    /// - Throws: ``StepFailure`` for a next URL or cursor an earlier page gave (`given` holds
    ///   their hashes), a next URL that is not http(s) or is on another origin than `origin`.
    private static func nextPage(
        after read: PageRead, page number: Int, of pagination: Pagination, origin: String?, given: inout Set<Int>
    ) throws -> NextPage? {
        if case .number = pagination.next { return read.items.isEmpty ? nil : .number }
        guard let next = read.next else { return nil }
        guard given.insert(next.hashValue).inserted else {
            throw StepFailure(
                "paginate: page \(number) gave a next page an earlier page gave ('\(short: next)'): the pages would never end"
            )
        }
        if case .cursor = pagination.next { return .cursor(next) }
        let resolved = try resolve(next, against: read.sent, page: number)
        guard Self.origin(ofURL: resolved) == origin else {
            throw StepFailure(
                "paginate: page \(number)'s next page '\(short: resolved)' is on another origin than the first page (\(origin ?? "?")); the pages of one step stay on one origin, so its credentials go nowhere else"
            )
        }
        return .url(resolved)
    }

    /// The page after one: the next number, a cursor for `{{page.cursor}}`, or a URL.
    private enum NextPage {
        case number
        case cursor(String)
        case url(String)
    }

    /// Writes the pages' reports into the step's report.
    private func finishPages(_ step: WorkflowStep, outcome: FanOutOutcome, moreLeft: Bool) {
        report(outcome, of: step.id)
        if moreLeft {
            update(step.id) { $0.note = "max_pages (\(outcome.counts.total)) reached; more pages were left" }
        }
    }

    /// `scheme://host:port` of a request.
    static func origin(of request: HTTPRequest?) -> String? {
        guard let request, let scheme = request.scheme, let authority = request.authority else { return nil }
        return origin(ofURL: "\(scheme)://\(authority)/")
    }

    /// `scheme://host:port` of a URL, the port written out.
    static func origin(ofURL text: String) -> String? {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased()
        else { return nil }
        let port = components.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(host):\(port)"
    }

    /// The next page's URL, relative to the page's own.
    static func resolve(_ next: String, against sent: HTTPRequest?, page: Int) throws -> String {
        let base = sent.flatMap { request -> URL? in
            guard let scheme = request.scheme, let authority = request.authority else { return nil }
            return URL(string: "\(scheme)://\(authority)\(request.path ?? "/")")
        }
        guard let url = URL(string: next, relativeTo: base)?.absoluteURL,
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil
        else {
            throw StepFailure("paginate: page \(page)'s next page '\(short: next)' is not an http(s) URL")
        }
        return url.absoluteString
    }

    /// Sends one request per item of the pages `channel` brings, as they arrive, each like an
    /// element of ``fanOut(_:over:values:)`` (the same window, reports and captures); the list's
    /// length is known once the last page has arrived. When the pages end early (their step
    /// failed), the elements started finish and the step fails naming it.
    func fanOut(
        _ step: WorkflowStep, streamedFrom channel: PageChannel, values: TemplateValues
    ) async throws -> [String: JSONValue] {
        defer { channel.leave() }
        let kept = keptCaptures(of: step)
        var outcome = FanOutOutcome(keepsAll: keepsItemReports, keeping: kept, count: 0)
        emit(.progress(step: step.id, finished: 0, total: 0, counts: outcome.counts))
        var pagesFailed: (any Error)?
        var total = 0
        let window = self.window
        await withTaskGroup(of: (Int, ElementEnd).self) { group in
            var running = 0
            var exhausted = false
            var finished = 0
            while true {
                if !exhausted, running < window {
                    do {
                        if let item = try await channel.next() {
                            let index = total
                            total += 1
                            outcome.grow(to: total)
                            group.addTask { (index, await element(step, index: index, item: item, values: values)) }
                            running += 1
                            continue
                        }
                    } catch is CancellationError {
                        group.cancelAll()
                    } catch {
                        pagesFailed = error
                    }
                    exhausted = true
                }
                guard let (index, end) = await group.next() else { break }
                running -= 1
                finished += 1
                outcome.record(index, end.result, end.report)
                emit(.progress(step: step.id, finished: finished, total: total, counts: outcome.counts))
            }
        }
        report(outcome, of: step.id)
        if outcome.wasCancelled || Task.isCancelled { throw CancellationError() }
        if let pagesFailed {
            throw StepFailure(
                "for_each: step '\(short: channel.producer)' \(pagesFailed) (after \(total) of its items)")
        }
        return try captures(of: step, from: outcome, kept: kept, total: total)
    }
}

/// What one page gave: its items, where the next page is (a URL as written, or a cursor),
/// and the request that fetched it. Filled by the page's response, read once it ended, in the
/// same task.
private final class PageRead {
    var items: [JSONValue] = []
    var next: String?
    var sent: HTTPRequest?

    func read(_ reader: inout ResponseReader, sent: HTTPRequest, pagination: Pagination, page: Int) throws {
        self.sent = sent
        if let path = pagination.items {
            switch reader.document().flatMap({ path.evaluate(in: $0) }) {
            case .array(let list): items = list.map(\.detached)
            case nil, .null?:
                guard reader.document() != nil else {
                    throw StepFailure(
                        "paginate.items: page \(page)'s response\(reader.typeNote) \(reader.notJSON): \(reader.snippet)"
                    )
                }
            case let other?:
                throw StepFailure(
                    "paginate.items: \(short: path) of page \(page) is \(StepExecutor<ContinuousClock>.kind(of: other)), not a list"
                )
            }
        }
        switch pagination.next {
        case .number: next = nil
        case .url(let source), .cursor(let source):
            next = try Self.value(of: source, in: &reader, page: page)
            if case .url(.header(let name)) = pagination.next, name.canonicalName == "link", let links = next {
                next = Self.nextLink(in: links)
            }
        }
    }

    /// The text of `source` in the page; `nil` when it is absent, null or empty (the last page).
    private static func value(of source: Capture.Source, in reader: inout ResponseReader, page: Int) throws -> String? {
        switch source {
        case .header(let name):
            return reader.result.response.headerFields[name].flatMap { $0.isEmpty ? nil : $0 }
        case .body(let path):
            guard let document = reader.document() else {
                throw StepFailure(
                    "paginate: page \(page)'s response\(reader.typeNote) \(reader.notJSON), so \(short: path) cannot be read: \(reader.snippet)"
                )
            }
            switch path.evaluate(in: document) {
            case nil, .null?: return nil
            case .string(let text)?: return text.isEmpty ? nil : text
            case .integer(let number)?: return String(number)
            case let other?:
                throw StepFailure(
                    "paginate: \(short: path) of page \(page) is \(StepExecutor<ContinuousClock>.kind(of: other)), not a URL or cursor"
                )
            }
        case .regex:
            let value = try? reader.value(of: source)
            if case .string(let text)? = value, !text.isEmpty { return text }
            return nil
        }
    }

    /// The `rel="next"` target of a `Link` field (RFC 8288): `<https://…?page=2>; rel="next"`.
    static func nextLink(in field: String) -> String? {
        var rest = Substring(field)
        while let open = rest.firstIndex(of: "<") {
            guard let close = rest[open...].firstIndex(of: ">") else { return nil }
            let target = rest[rest.index(after: open)..<close]
            var parameters = rest[rest.index(after: close)...]
            if let nextLink = parameters.firstIndex(of: "<") { parameters = parameters[..<nextLink] }
            for parameter in parameters.split(separator: ";") {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "rel" else {
                    continue
                }
                let relations = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: " \t\","))
                    .lowercased().split(separator: " ")
                if relations.contains("next") { return String(target) }
            }
            rest = rest[rest.index(after: close)...]
        }
        return nil
    }
}
