import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("WorkflowRunner: data-driven runs", .timeLimit(.minutes(1)), .takesTurns)
struct DataRunTests {
    static let flow = """
        limit: 3
        auth:
          login: { url: "http://x.test/login", token: $.token }
        steps:
          - { id: session, url: "http://x.test/session/{{data.user}}", captures: { seen: $.cookie } }
          - { id: profile, url: "http://x.test/users/{{data.user}}?n={{data.n}}", needs: session, captures: { seen: $.cookie }, assert: [ { $.n: "{{data.n}}" } ] }
        """

    /// Logs in; `/session/U` sets the cookie `who=U`; every answer echoes the Cookie header.
    static func server(gate: AsyncGate? = nil) -> ScriptedHTTPTransport {
        ScriptedHTTPTransport { request, _ in
            let path = request.path ?? ""
            if path == "/login" { return respond(200, #"{"token":"t"}"#) }
            if let gate, path.hasPrefix("/users/") { try await gate.pass() }
            var headers: HTTPFields = [:]
            if path.hasPrefix("/session/") { headers[.setCookie] = "who=\(path.dropFirst("/session/".count)); Path=/" }
            // `?n=N` is echoed as the number N.
            let n = path.split(separator: "?n=").dropFirst().first.map { #","n":\#($0)"# } ?? ""
            return respond(200, #"{"cookie":"\#(request.headerFields[.cookie] ?? "")"\#(n)}"#, headers: headers)
        }
    }

    static let rows = (0..<8).map { ["user": "u\($0)", "n": "\($0)"] }

    @Test func eachRowRunsWithItsValuesItsOwnCookiesAndOneSharedLogin() async throws {
        let workflow = try Workflow.parse(Self.flow, file: "flow.yaml", environment: [:], dataColumns: ["user", "n"])
        let transport = Self.server()
        let ended = Locked<[Int]>([])
        let report = try await withHangGuard { () async -> DataRunReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(
                rows: Self.rows, parallel: 4, clock: ManualClock()
            ) { row in ended.withLock { $0.append(row.index) } }
        }
        #expect(report.allSucceeded && report.succeededRows == 8)
        #expect(report.rows.map(\.index) == Array(0..<8), "in row order")
        #expect(Set(ended.withLock { $0 }) == Set(0..<8), "onRow once per row")
        #expect(report.logins == 1, "one login for every row")
        #expect(transport.requests.count { $0.path == "/login" } == 1)
        for row in report.rows {
            let profile = try #require(row.report["profile"])
            #expect(profile.url == "http://x.test/users/u\(row.index)?n=\(row.index)")
            #expect(profile.captures.first?.value == .string("who=u\(row.index)"), "only the row's own cookie")
            #expect(row.report["session"]?.captures.first?.value == .string(""), "no cookie before the row set one")
        }
    }

    @Test func theWorkflowLimitHoldsAcrossRowsRunningAtOnce() async throws {
        let workflow = try Workflow.parse(Self.flow, file: "flow.yaml", environment: [:], dataColumns: ["user", "n"])
        let gate = AsyncGate(isOpen: false)
        let transport = Self.server(gate: gate)
        try await withHangGuard {
            async let report = WorkflowRunner(workflow: workflow, transport: transport).run(
                rows: Self.rows, parallel: 8, clock: ManualClock())
            // Three profile requests, the workflow's limit, hold every slot across the rows. (How
            // many rows had sent their session request by then depends on when each row's task
            // started: under ThreadSanitizer the last one sometimes queued behind the gated
            // profiles, so that count is checked once the run is over.)
            try await waitUntil("three profile requests in flight, the workflow's limit") {
                transport.inFlight == 3 && transport.requests.count { $0.path!.hasPrefix("/users/") } == 3
            }
            gate.open()
            let result = await report
            #expect(result.allSucceeded && result.succeededRows == 8)
        }
        #expect(transport.peakInFlight == 3)
        #expect(transport.requests.count { $0.path!.hasPrefix("/session/") } == 8)
        #expect(transport.requests.count { $0.path!.hasPrefix("/users/") } == 8)
    }

    @Test func cancellingTheRunReportsTheRowsNeverStartedAsCancelled() async throws {
        let workflow = try Workflow.parse(Self.flow, file: "flow.yaml", environment: [:], dataColumns: ["user", "n"])
        let gate = AsyncGate(isOpen: false)
        let transport = Self.server(gate: gate)
        try await withHangGuard {
            let run = Task {
                await WorkflowRunner(workflow: workflow, transport: transport).run(
                    rows: Self.rows, parallel: 2, clock: ManualClock())
            }
            try await waitUntil("two rows waiting on their profile") {
                transport.requests.count { $0.path!.hasPrefix("/users/") } == 2
            }
            run.cancel()
            let report = await run.value
            #expect(report.rows.count == 8)
            #expect(report.rows[0..<2].allSatisfy { $0.report["profile"]?.state == .cancelled })
            #expect(report.rows[2...].allSatisfy { $0.started == nil && $0.report.count(.cancelled) == 2 })
            #expect(!report.allSucceeded)
        }
    }
}
