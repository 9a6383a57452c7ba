import Dispatch
import Orchestra
import TestSupport
import Testing

/// A stand-in for a completion-handler API such as a networking library's request call.
final class LegacyAPI: Sendable {
    private let pending = Locked<[@Sendable (Result<String, any Error>) -> Void]>([])
    private let cancellations = Locked(0)

    var pendingCount: Int { pending.withLock { $0.count } }
    var cancelCount: Int { cancellations.withLock { $0 } }

    /// Stores the handler until `respond` or `drop` is called.
    func fetch(_ completion: @escaping @Sendable (Result<String, any Error>) -> Void) {
        pending.withLock { $0.append(completion) }
    }

    func cancel() {
        cancellations.withLock { $0 += 1 }
    }

    /// Calls the oldest stored handler `times` times, from another thread.
    func respond(_ result: Result<String, any Error>, times: Int = 1) {
        let handler = pending.withLock { $0.removeFirst() }
        DispatchQueue.global().async {
            for _ in 0..<times { handler(result) }
        }
    }

    /// Releases every stored handler without calling it.
    func drop() {
        pending.withLock { $0.removeAll() }
    }
}

@Suite("withCallback", .timeLimit(.minutes(1)), .takesTurns)
struct WithCallbackTests {
    let api = LegacyAPI()
    let diagnostics = EventLog<OrchestraDiagnostic>()
    var handler: DiagnosticsHandler {
        DiagnosticsHandler { [diagnostics] in diagnostics.append($0) }
    }

    @Test func returnsTheValueTheLegacyAPIDelivers() async throws {
        let call = Task { [api, handler] in
            try await withCallback(diagnostics: handler) { completion in api.fetch { completion($0) } }
        }
        try await waitUntil("the legacy call started") { api.pendingCount == 1 }
        api.respond(.success("image"))
        #expect(try await call.value == "image")
        #expect(diagnostics.count == 0)
    }

    @Test func throwsTheErrorTheLegacyAPIDelivers() async throws {
        let call = Task { [api] in
            try await withCallback { completion in api.fetch { completion($0) } }
        }
        try await waitUntil("the legacy call started") { api.pendingCount == 1 }
        api.respond(.failure(TestError("offline")))
        await #expect(throws: TestError("offline")) { try await call.value }
    }

    @Test func aSecondCompletionIsIgnoredAndReported() async throws {
        let call = Task { [api, handler] in
            try await withCallback(diagnostics: handler) { completion in api.fetch { completion($0) } }
        }
        try await waitUntil("the legacy call started") { api.pendingCount == 1 }
        api.respond(.success("first"), times: 2)
        #expect(try await call.value == "first")
        try await waitUntil("the second call was reported") { diagnostics.count == 1 }
        #expect(diagnostics.events.first?.kind == .doubleCompletion)
        #expect(diagnostics.events.first?.location.hasPrefix("OrchestraTests/WithCallbackTests.swift:") == true)
    }

    @Test func aCompletionReleasedWithoutBeingCalledEndsTheAwaitWithAbandoned() async throws {
        let call = Task { [api] in
            try await withCallback { completion in api.fetch { completion($0) } }
        }
        try await waitUntil("the legacy call started") { api.pendingCount == 1 }
        api.drop()
        do {
            _ = try await call.value
            Issue.record("expected CallbackError.abandoned")
        } catch CallbackError.abandoned {
            // The pattern the documentation promises.
        }
        let error = await #expect(throws: CallbackError.self) { try await call.value }
        #expect(error?.code == .abandoned)
        #expect(error?.message.contains("WithCallbackTests.swift") == true)
    }

    @Test func aBodyThatNeverKeepsTheCompletionIsAbandonedAtOnce() async throws {
        let error = await #expect(throws: CallbackError.self) {
            let _: Int = try await withCallback { _ in }
        }
        #expect(error?.code == .abandoned)
    }

    @Test func cancellationEndsTheAwaitAtOnceCancelsTheLegacyWorkAndReportsALateCompletion() async throws {
        let call = Task { [api, handler] in
            try await withCallback(diagnostics: handler, onCancel: { api.cancel() }) { completion in
                api.fetch { completion($0) }
            }
        }
        try await waitUntil("the legacy call started") { api.pendingCount == 1 }
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(api.cancelCount == 1)

        api.respond(.success("too late"))
        try await waitUntil("the late completion was reported") { diagnostics.count == 1 }
        #expect(diagnostics.events.first?.kind == .lateCompletion)
        #expect(diagnostics.events.first?.isExpected == true, "the legacy work was asked to cancel")
    }

    @Test func aLateCompletionWithoutACancellationHandlerIsReportedAsUnexpected() async throws {
        let call = Task { [api, handler] in
            try await withCallback(diagnostics: handler) { completion in api.fetch { completion($0) } }
        }
        try await waitUntil("the legacy call started") { api.pendingCount == 1 }
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        api.respond(.success("ran to the end"))
        try await waitUntil("the late completion was reported") { diagnostics.count == 1 }
        #expect(diagnostics.events.first?.kind == .lateCompletion)
        #expect(diagnostics.events.first?.isExpected == false)
        #expect(diagnostics.events.first?.message.contains("pass onCancel:") == true)
    }

    @Test func aHandlerRegisteredOnTheCompletionCancelsTheLegacyWork() async throws {
        let call = Task { [api] in
            try await withCallback { (completion: Completion<String>) in
                api.fetch { completion($0) }
                completion.onCancel { api.cancel() }
            }
        }
        try await waitUntil("the legacy call started") { api.pendingCount == 1 }
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(api.cancelCount == 1)
    }

    @Test func anAlreadyCancelledTaskNeverStartsTheLegacyWork() async throws {
        let call = Task { [api] in
            withUnsafeCurrentTask { $0?.cancel() }
            return try await withCallback { completion in api.fetch { completion($0) } }
        }
        await #expect(throws: CancellationError.self) { try await call.value }
        #expect(api.pendingCount == 0)
    }

    @Test func anErrorThrownByTheBodyEndsTheAwait() async throws {
        await #expect(throws: TestError("bad url")) {
            let _: String = try await withCallback { _ in throw TestError("bad url") }
        }
    }

    @Test func theTaskLocalHandlerIsCapturedWhenTheCallStarts() async throws {
        let call = Task { [api, handler] in
            try await DiagnosticsHandler.$current.withValue(handler) {
                try await withCallback { completion in api.fetch { completion($0) } }
            }
        }
        try await waitUntil("the legacy call started") { api.pendingCount == 1 }
        api.respond(.success("once"), times: 3)
        #expect(try await call.value == "once")
        try await waitUntil("both extra calls were reported") { diagnostics.count == 2 }
        #expect(diagnostics.events.allSatisfy { $0.kind == .doubleCompletion })
    }

    @MainActor
    @Test func theBodyRunsInTheCallersIsolation() async throws {
        let value: Int = try await withCallback { completion in
            MainActor.assertIsolated()
            completion.resume(returning: 1)
        }
        #expect(value == 1)
    }
}
