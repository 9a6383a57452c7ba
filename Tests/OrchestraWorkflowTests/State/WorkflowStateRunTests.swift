import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// A state file path in a fresh folder, removed after `body`.
func withStateFile<T>(_ body: (String) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-state-\(UUID())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(folder.appendingPathComponent("run.state").path)
}

/// One run of `workflow` with the state file at `path`, over `transport`.
func runWithState(
    _ workflow: Workflow, path: String, transport: ScriptedHTTPTransport, force: Bool = false,
    resendsUncertain: Bool = false
) async throws -> WorkflowReport {
    let state = try WorkflowState.open(path: path, workflow: workflow, force: force)
    return await WorkflowRunner(
        workflow: workflow, transport: transport, state: state, resendsUncertain: resendsUncertain
    ).run(clock: ManualClock())
}

/// Runs `workflow` with the state file at `path` over `transport`, and cancels the run, as
/// Ctrl-C or a kill stops it, once `condition` holds.
func runStopped(
    _ workflow: Workflow, path: String, transport: ScriptedHTTPTransport, when what: String, force: Bool = false,
    _ condition: @escaping @Sendable () -> Bool
) async throws -> WorkflowReport {
    try await withHangGuard {
        let state = try WorkflowState.open(path: path, workflow: workflow, force: force)
        // Unstructured: the test cancels it from outside, as a signal would.
        let run = Task {
            await WorkflowRunner(workflow: workflow, transport: transport, state: state).run(clock: ManualClock())
        }
        try await waitUntil(what, condition)
        run.cancel()
        return await run.value
    }
}

@Suite("WorkflowRunner with a --state file", .timeLimit(.minutes(1)), .takesTurns)
struct WorkflowStateRunTests {
    static let listThenEach = """
        steps:
          - { id: list, url: "http://x.test/list", captures: { items: $.items } }
          - id: each
            for_each: "{{list.items}}"
            url: "http://x.test/item/{{item}}"
            captures: { v: $.v }
          - id: sum
            method: POST
            url: "http://x.test/sum"
            body: { v: "{{each.v}}" }
        """

    /// Answers `/list` with 0…9, `/item/N` with `{"v": N*10}` (or 500 for the items in
    /// `failing`), and records the bodies sent to `/sum`.
    static func server(failing: Set<Int> = [], sums: Locked<[String]>) -> ScriptedHTTPTransport {
        ScriptedHTTPTransport { request, body in
            let path = request.path ?? ""
            if path == "/list" { return respond(200, #"{"items":[0,1,2,3,4,5,6,7,8,9]}"#) }
            if path == "/sum" {
                sums.withLock { $0.append(String(decoding: body ?? Data(), as: UTF8.self)) }
                return respond()
            }
            let item = Int(path.split(separator: "/").last ?? "") ?? -1
            return failing.contains(item) ? respond(500, "{}") : respond(200, #"{"v":\#(item * 10)}"#)
        }
    }

    @Test func aResumeSendsOnlyWhatDidNotSucceedAndReusesTheRecordedCaptures() async throws {
        let workflow = try parse(Self.listThenEach)
        try await withStateFile { path in
            let sums = Locked<[String]>([])
            let first = Self.server(failing: [3, 7], sums: sums)
            let report = try await runWithState(workflow, path: path, transport: first)
            #expect(report["each"]?.state == .failed)
            #expect(report["sum"]?.state == .skipped)
            #expect(first.requests.count == 11)

            let summary = try WorkflowStateSummary.read(path: path)
            #expect(summary.runs == 1)
            #expect(summary.steps.map(\.id) == ["list", "each", "sum"])
            #expect(summary.steps[1].succeeded == 8 && summary.steps[1].failed == 2 && summary.steps[1].total == 10)
            #expect(summary.steps[2].pending == 1)
            #expect(!summary.isComplete)

            let second = Self.server(sums: sums)
            let resumed = try await runWithState(workflow, path: path, transport: second)
            #expect(resumed.allSucceeded)
            // Only the two failed elements and the step that waited for them.
            #expect(second.requests.compactMap(\.path).sorted() == ["/item/3", "/item/7", "/sum"])
            #expect(resumed["list"]?.recorded == true)
            #expect(resumed["each"]?.itemCounts?.recorded == 8)
            #expect(resumed["each"]?.itemCounts?.sent == 2)
            // The captures of the elements not sent again come from the file.
            #expect(sums.withLock { $0 } == [#"{"v":[0,10,20,30,40,50,60,70,80,90]}"#])
            let done = try WorkflowStateSummary.read(path: path)
            #expect(done.isComplete)
            #expect(done.runs == 2)

            // A third run sends nothing at all.
            let third = Self.server(sums: sums)
            #expect(try await runWithState(workflow, path: path, transport: third).allSucceeded)
            #expect(third.requests.isEmpty)
        }
    }

    /// How a step's element that was in flight when the run stopped is treated by the next run.
    enum InFlight: String, CaseIterable {
        case post, postWithResendOnResume, postWithIdempotencyKey, get

        var step: String {
            switch self {
            case .post: "method: POST"
            case .postWithResendOnResume: "method: POST\n    resend_on_resume: true"
            case .postWithIdempotencyKey: "method: POST\n    headers: { Idempotency-Key: \"k-{{item}}\" }"
            case .get: "method: GET"
            }
        }

        var resends: Bool { self != .post }
    }

    @Test(arguments: InFlight.allCases)
    func anElementInFlightWhenTheRunStoppedIsSentAgainOnlyIfThatIsSafe(_ kind: InFlight) async throws {
        let workflow = try parse(
            """
            steps:
              - { id: list, url: "http://x.test/list", captures: { items: $.items } }
              - id: each
                for_each: "{{list.items}}"
                url: "http://x.test/item/{{item}}"
                \(kind.step)
            """)
        try await withStateFile { path in
            let gate = AsyncGate(isOpen: false)
            let first = ScriptedHTTPTransport { request, _ in
                if request.path == "/list" { return respond(200, #"{"items":[0,1,2,3]}"#) }
                if request.path == "/item/2" { try await gate.pass() }
                return respond()
            }
            let stopped = try await runStopped(
                workflow, path: path, transport: first, when: "elements 0, 1 and 3 done and 2 in flight"
            ) {
                // Done means recorded: a response the transport has returned is not yet in the file.
                first.requests.count == 5 && first.inFlight == 1
                    && (try? WorkflowStateSummary.read(path: path))?.steps[1].succeeded == 3
            }
            #expect(stopped["each"]?.state == .cancelled)

            let second = ScriptedHTTPTransport { _, _ in respond() }
            let resumed = try await runWithState(workflow, path: path, transport: second)
            if kind.resends {
                #expect(second.requests.compactMap(\.path) == ["/item/2"])
                #expect(resumed.allSucceeded)
            } else {
                #expect(second.requests.isEmpty)
                let each = try #require(resumed["each"])
                #expect(each.state == .failed)
                let item = try #require(each.items?.first { $0.id == "each[2]" })
                #expect(item.maybeSent)
                #expect(item.error?.contains("may have been sent") == true)
                #expect(try WorkflowStateSummary.read(path: path).steps[1].maybeSent == 1)

                // Still uncertain until asked: then it is sent.
                let third = ScriptedHTTPTransport { _, _ in respond() }
                #expect(try await runWithState(workflow, path: path, transport: third).allSucceeded == false)
                #expect(third.requests.isEmpty)
                let fourth = ScriptedHTTPTransport { _, _ in respond() }
                let resent = try await runWithState(workflow, path: path, transport: fourth, resendsUncertain: true)
                #expect(resent.allSucceeded)
                #expect(fourth.requests.compactMap(\.path) == ["/item/2"])
            }
            #expect(try WorkflowStateSummary.read(path: path).isComplete)
        }
    }

    /// A `paginate:` step of `method` over 3 pages of 2 items (`/pages?page=N`) whose items a
    /// `for_each` step takes (`/item/N`).
    static func pagesThenEach(method: String) -> String {
        """
        steps:
          - id: list
            method: \(method)
            url: "http://x.test/pages?page={{page.number}}"
            paginate: { items: $.data }
          - id: each
            for_each: "{{list.items}}"
            url: "http://x.test/item/{{item}}"
        """
    }

    /// Pages 1–3 hold two items each; page 4 is empty (the end of numbered pages).
    static func page(_ request: HTTPRequest) -> (HTTPResponse, Data)? {
        guard let path = request.path, path.hasPrefix("/pages?page="), let page = Int(path.dropFirst(12)) else {
            return nil
        }
        let items = page <= 3 ? [2 * page - 2, 2 * page - 1] : []
        return respond(200, #"{"data":[\#(items.map(String.init).joined(separator: ","))]}"#)
    }

    @Test func aPaginateStepIsRecordedOnceWithItsItemsAndAResumeSendsNoPage() async throws {
        let workflow = try parse(Self.pagesThenEach(method: "POST"))
        try await withStateFile { path in
            let first = ScriptedHTTPTransport { request, _ in
                if let page = Self.page(request) { return page }
                return request.path == "/item/4" ? respond(500, "{}") : respond()
            }
            let report = try await runWithState(workflow, path: path, transport: first)
            #expect(report["list"]?.state == .succeeded)
            #expect(report["each"]?.state == .failed)
            let summary = try WorkflowStateSummary.read(path: path)
            #expect(summary.steps[0].succeeded == 1 && summary.steps[0].maybeSent == 0 && summary.steps[0].pending == 0)
            #expect(summary.steps[1].succeeded == 5 && summary.steps[1].failed == 1)

            // The pages are not sent again: their items come from the file.
            let second = ScriptedHTTPTransport { _, _ in respond() }
            let resumed = try await runWithState(workflow, path: path, transport: second)
            #expect(resumed.allSucceeded, "\(resumed.steps.map { "\($0.id): \($0.error ?? "-")" })")
            #expect(second.requests.compactMap(\.path) == ["/item/4"])
            #expect(resumed["list"]?.recorded == true)
            #expect(try WorkflowStateSummary.read(path: path).isComplete)
        }
    }

    @Test(arguments: ["POST", "GET"])
    func aPaginateStepStoppedBetweenItsPagesIsSentAgainOnlyIfThatIsSafe(_ method: String) async throws {
        let workflow = try parse(Self.pagesThenEach(method: method))
        try await withStateFile { path in
            let gate = AsyncGate(isOpen: false)
            let first = ScriptedHTTPTransport { request, _ in
                if request.path == "/pages?page=2" { try await gate.pass() }
                return Self.page(request) ?? respond()
            }
            _ = try await runStopped(workflow, path: path, transport: first, when: "page 2 in flight") {
                first.inFlight == 1 && first.requests.count == 2
            }
            let second = ScriptedHTTPTransport { request, _ in Self.page(request) ?? respond() }
            let resumed = try await runWithState(workflow, path: path, transport: second)
            if method == "GET" {
                #expect(resumed.allSucceeded)
                #expect(second.requests.compactMap(\.path).filter { $0.hasPrefix("/pages") }.count == 4)
            } else {
                #expect(second.requests.isEmpty)
                #expect(resumed["list"]?.maybeSent == true)
                #expect(resumed["list"]?.error?.contains("may have been sent") == true)
                #expect(resumed["each"]?.state == .skipped)
                #expect(try WorkflowStateSummary.read(path: path).steps[0].maybeSent == 1)
            }
        }
    }

    @Test func aStepThatIsNotSafeToSendTwiceAndWasInFlightIsReportedMayHaveBeenSent() async throws {
        let workflow = try parse(
            """
            steps:
              - { id: order, method: POST, url: "http://x.test/orders", body: { n: 1 } }
              - { id: after, url: "http://x.test/after", needs: order }
            """)
        try await withStateFile { path in
            let gate = AsyncGate(isOpen: false)
            let first = ScriptedHTTPTransport { _, _ in
                try await gate.pass()
                return respond()
            }
            _ = try await runStopped(workflow, path: path, transport: first, when: "the POST in flight") {
                first.inFlight == 1
            }
            let second = ScriptedHTTPTransport { _, _ in respond() }
            let resumed = try await runWithState(workflow, path: path, transport: second)
            #expect(second.requests.isEmpty)
            #expect(resumed["order"]?.state == .failed)
            #expect(resumed["order"]?.maybeSent == true)
            #expect(resumed["after"]?.state == .skipped)
        }
    }

    @Test func aRequestCancelledBeforeItWasSentIsNotReportedMayHaveBeenSent() async throws {
        // limit 1: the second POST waits for a slot; it is recorded as being sent only once it
        // has one.
        let workflow = try parse(
            """
            limit: 1
            steps:
              - { id: a, method: POST, url: "http://x.test/a" }
              - { id: b, method: POST, url: "http://x.test/b" }
            """)
        try await withStateFile { path in
            let gate = AsyncGate(isOpen: false)
            let first = ScriptedHTTPTransport { _, _ in
                try await gate.pass()
                return respond()
            }
            _ = try await runStopped(workflow, path: path, transport: first, when: "one POST in flight") {
                first.inFlight == 1
            }
            let sent = try #require(first.requests.first?.path)
            let second = ScriptedHTTPTransport { _, _ in respond() }
            let resumed = try await runWithState(workflow, path: path, transport: second)
            // The one that was sent may have been; the one that waited is simply sent now.
            #expect(second.requests.count == 1)
            #expect(second.requests.first?.path != sent)
            #expect(resumed.steps.count(where: \.maybeSent) == 1)
        }
    }

    @Test func aStateFileOfAnotherWorkflowIsRefusedUnlessForcedAndAChangedListStartsOver() async throws {
        let workflow = try parse(Self.listThenEach)
        try await withStateFile { path in
            let sums = Locked<[String]>([])
            _ = try await runWithState(workflow, path: path, transport: Self.server(failing: [5], sums: sums))
            // Another list: the step that reads it has another id, so nothing recorded is reused
            // for it, and the elements recorded for the old list are dropped.
            let changed = try parse(
                Self.listThenEach.replacingOccurrences(of: "id: list", with: "id: list2")
                    .replacingOccurrences(of: "{{list.items}}", with: "{{list2.items}}")
                    .replacingOccurrences(of: "/list", with: "/list2"))
            #expect(changed.digest != workflow.digest)
            let error = #expect(throws: WorkflowStateError.self) {
                try WorkflowState.open(path: path, workflow: changed, force: false)
            }
            #expect(error?.code == .differentWorkflow)
            #expect(error?.message.contains(path) == true)

            let transport = ScriptedHTTPTransport { request, _ in
                if request.path == "/list2" { return respond(200, #"{"items":[0,1,2,3,4,5,6,7,8,9,10]}"#) }
                return respond(200, #"{"v":1}"#)
            }
            let report = try await runWithState(changed, path: path, transport: transport, force: true)
            #expect(report.allSucceeded)
            #expect(report["each"]?.itemCounts?.recorded == 0)
            #expect(transport.requests.count == 13)
            let summary = try WorkflowStateSummary.read(path: path)
            #expect(summary.steps.map(\.id) == ["list2", "each", "sum"])
            #expect(summary.steps[1].succeeded == 11)
            #expect(summary.digest == changed.digest)
        }
    }

    /// A step its `when:` skipped (or a dependency's) has nothing to send: the summary counts
    /// it done, not pending, so the file of a run that succeeded is complete (`orchestra status`
    /// exits 0, as the run did). The next run decides again: stopped before it reached the step,
    /// the step is pending; run to its end, it sent it.
    @Test func aStepSkippedByAWhenIsDoneNotPendingUntilALaterRunDecidesAgain() async throws {
        func workflow(go: String) throws -> Workflow {
            try parse(
                """
                vars: { go: "\(go)" }
                steps:
                  - { id: a, url: "http://x.test/a" }
                  - { id: b, url: "http://x.test/b", when: "{{vars.go}} == yes", needs: [a] }
                  - { id: c, url: "http://x.test/c", needs: [b] }
                  - { id: list, url: "http://x.test/list", captures: { items: $.items }, needs: [a] }
                  - { id: each, for_each: "{{list.items}}", url: "http://x.test/item/{{item}}", when: "{{vars.go}} == yes" }
                """)
        }
        @Sendable func answer(_ request: HTTPRequest) -> (HTTPResponse, Data) {
            request.path == "/list" ? respond(200, #"{"items":[1,2]}"#) : respond()
        }
        let server = ScriptedHTTPTransport { request, _ in answer(request) }
        try await withStateFile { path in
            let skipping = try await runWithState(try workflow(go: "no"), path: path, transport: server)
            #expect(skipping.allSucceeded)
            #expect(server.requests.compactMap(\.path).sorted() == ["/a", "/list"])
            let summary = try WorkflowStateSummary.read(path: path)
            #expect(summary.steps.map(\.skipped) == [false, true, true, false, true])
            #expect(summary.steps.map(\.pending) == [0, 0, 0, 0, 0])
            #expect(summary.isComplete)

            // Stopped while /b is in flight: b and c, which the first run skipped, are not
            // decided by this one yet.
            let gate = AsyncGate(isOpen: false)
            let stalled = ScriptedHTTPTransport { request, _ in
                if request.path == "/b" { try await gate.pass() }
                return answer(request)
            }
            _ = try await runStopped(
                try workflow(go: "yes"), path: path, transport: stalled, when: "/b in flight", force: true
            ) { stalled.requests.contains { $0.path == "/b" } }
            let stopped = try WorkflowStateSummary.read(path: path)
            #expect(stopped.steps.map(\.skipped) == [false, false, false, false, false])
            #expect(stopped.steps[1].pending == 1 && stopped.steps[2].pending == 1 && !stopped.isComplete)

            let sending = ScriptedHTTPTransport { request, _ in answer(request) }
            let report = try await runWithState(try workflow(go: "yes"), path: path, transport: sending, force: true)
            #expect(report.allSucceeded)
            #expect(sending.requests.compactMap(\.path).contains("/b"))
            #expect(sending.requests.compactMap(\.path).contains("/c"))
            let after = try WorkflowStateSummary.read(path: path)
            #expect(after.steps.map(\.skipped) == [false, false, false, false, false])
            #expect(after.steps.map(\.succeeded) == [1, 1, 1, 1, 2])
            #expect(after.steps[4].total == 2 && after.isComplete)
        }
    }

    /// CI once saw a run refused the file the run before it had just ended: the lock went with
    /// the state object, which something still held. The lock now goes when the run's writer
    /// ends; here the first run's state is still held while the second run opens the file.
    @Test func aRunThatEndedFreesTheFileForTheNextRunWhileItsStateIsStillHeld() async throws {
        let workflow = try parse("steps:\n  - { id: a, url: \"http://x.test/a\" }")
        try await withStateFile { path in
            let first = try WorkflowState.open(path: path, workflow: workflow, force: false)
            let error = #expect(throws: WorkflowStateError.self) {
                try WorkflowState.open(path: path, workflow: workflow, force: false)
            }
            #expect(error?.code == .inUse, "a run that has not ended holds the file")
            let report = await WorkflowRunner(
                workflow: workflow, transport: ScriptedHTTPTransport { _, _ in respond() }, state: first
            ).run(clock: ManualClock())
            #expect(report.allSucceeded)
            let second = try WorkflowState.open(path: path, workflow: workflow, force: false)
            #expect(second.run == 2)
            withExtendedLifetime(first) {}
        }
    }
}
