import Orchestra

extension StepExecutor {
    /// Sends one request per element of the list `reference` names, all at once (each attempt
    /// still waits for a slot of the workflow's `limit` and its host's limit), each with its
    /// own retries, timeout and expectations, reported as `STEP[INDEX]`.
    ///
    /// A failed element does not cancel the others: once every element has ended, the step
    /// fails naming how many failed and the first (by index). An empty list succeeds having
    /// sent nothing. Returns each capture as an array of the elements' values, in order.
    ///
    /// Cancellation: cancelling the step cancels the elements in flight (reported cancelled)
    /// and throws `CancellationError` once they have ended. A cancellation that arrives after
    /// every element has ended changes nothing: the step reports what its elements did.
    func fanOut(_ step: WorkflowStep, over reference: Template.Reference, values: TemplateValues) async throws -> [String: JSONValue] {
        let list: JSONValue
        do {
            list = try values.value(of: reference)
        } catch {
            throw StepFailure("for_each: \(error)")
        }
        guard case .array(let elements) = list else {
            throw StepFailure("for_each: \(reference) is \(Self.kind(of: list)), not a list")
        }
        let ids = elements.indices.map { "\(step.id)[\($0)]" }
        emit(.progress(step: step.id, finished: 0, total: elements.count))
        let results = await withTaskGroup(of: (Int, Result<[String: JSONValue], any Error>).self) { group in
            for (index, element) in elements.enumerated() {
                var elementValues = values
                elementValues.item = element
                elementValues.index = index
                group.addTask {
                    do {
                        let captures = try await tracked(step, id: ids[index]) {
                            try await perform(step, id: ids[index], values: elementValues)
                        }
                        return (index, .success(captures))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results = [Result<[String: JSONValue], any Error>?](repeating: nil, count: elements.count)
            var finished = 0
            for await (index, result) in group {
                results[index] = result
                finished += 1
                emit(.progress(step: step.id, finished: finished, total: elements.count))
            }
            return results.map { $0! }
        }
        records.withLock { records in
            let items = ids.compactMap { records.removeValue(forKey: $0) }
            records[step.id]?.items = items
            records[step.id]?.attempts = items.reduce(0) { $0 + $1.attempts }
            records[step.id]?.firstSent = items.compactMap(\.firstSent).min()
        }
        let failures = results.enumerated().compactMap { index, result -> (index: Int, error: any Error)? in
            if case .failure(let error) = result { (index, error) } else { nil }
        }
        // Cancelled while elements were in flight: the step is cancelled. Cancelled only after
        // every element had ended, it reports what the elements did.
        if failures.contains(where: { $0.error is CancellationError }) { throw CancellationError() }
        if let first = failures.first {
            throw StepFailure("\(failures.count) of \(elements.count) requests failed; first: \(ids[first.index]): \(first.error)")
        }
        let captured = results.map { (try? $0.get()) ?? [:] }
        var captures: [String: JSONValue] = [:]
        for capture in step.captures {
            captures[capture.name] = .array(captured.map { $0[capture.name] ?? .null })
        }
        return captures
    }

    /// `an object`, `a string`, … for messages.
    static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "a list"
        case .object: "an object"
        }
    }
}
