import Foundation
import HTTPTypes
import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

func respond(_ status: Int = 200, _ text: String = "{}", headers: HTTPFields = [:]) -> (HTTPResponse, Data) {
    (HTTPResponse(status: .init(code: status), headerFields: headers), Data(text.utf8))
}

@Suite("WorkflowRunner", .timeLimit(.minutes(1)), .takesTurns)
struct WorkflowRunnerTests {
    @Test func independentStepsRunInParallelAndDependentsAfterTheirNeeds() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/a" || request.path == "/b" || request.path == "/c" { try await gate.pass() }
            return respond(200, #"{"v":"\#(request.path!.dropFirst())"}"#)
        }
        let workflow = try parse(
            """
            steps:
              - { id: a, url: "http://x.test/a", captures: { v: $.v } }
              - { id: b, url: "http://x.test/b" }
              - { id: c, url: "http://x.test/c" }
              - { id: d, url: "http://x.test/d/{{a.v}}", needs: b }
            """)
        try await withHangGuard {
            async let report = WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
            try await waitUntil("a, b and c in flight together") { transport.inFlight == 3 }
            #expect(transport.requests.count == 3, "d waits for a and b")
            gate.open()
            let result = await report
            #expect(result.allSucceeded)
            #expect(result["d"]?.url == "http://x.test/d/a")
        }
        #expect(transport.peakInFlight == 3)
        #expect(transport.requests.last?.path == "/d/a")
    }

    @Test func limitsAndHostLimitsHold() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            return respond()
        }
        let steps = (0..<6).map { "  - { id: s\($0), url: \"http://\($0 < 4 ? "one" : "two").test/\($0)\" }" }
        let workflow = try parse("limit: 3\nhosts: { one.test: 1 }\nsteps:\n" + steps.joined(separator: "\n"))
        try await withHangGuard {
            async let report = WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
            // The one.test steps wait for their host without holding back two.test's.
            try await waitUntil("three requests in flight") { transport.inFlight == 3 }
            #expect(transport.inFlight(host: "one.test") == 1)
            gate.open()
            #expect(await report.allSucceeded)
        }
        #expect(transport.peakInFlight(host: "one.test") == 1)
        #expect(transport.peakInFlight <= 3)
    }

    /// Without `hosts:` limits a ready step waits in the graph, not as a started task, beyond
    /// four times `limit` (or `limit` + 16): 20,000 independent steps held 600 MB of waiting
    /// tasks.
    @Test func readyStepsBeyondTheGraphLimitWaitUnstarted() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { _, _ in
            try await gate.pass()
            return respond()
        }
        let steps = (0..<60).map { "  - { id: s\($0), url: \"http://x.test/\($0)\" }" }
        let workflow = try parse("limit: 2\nsteps:\n" + steps.joined(separator: "\n"))
        let started = Locked(0)
        let graphLimit = WorkflowLimits(limit: 2).graphWindow
        #expect(graphLimit == 18)
        try await withHangGuard {
            async let report = WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock()) {
                event in
                if case .started = event { started.withLock { $0 += 1 } }
            }
            try await waitUntil("the graph's limit of steps started") { started.withLock { $0 } == graphLimit }
            try await waitUntil("two requests in flight") { transport.inFlight == 2 }
            #expect(started.withLock { $0 } == graphLimit, "no step starts beyond the graph's limit while all wait")
            gate.open()
            #expect(await report.allSucceeded)
        }
        #expect(started.withLock { $0 } == 60)
        #expect(transport.peakInFlight == 2)
    }

    @Test func continueSkipsOnlyTheDependentsOfAFailure() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            request.path == "/bad" ? respond(404, "no such thing") : respond()
        }
        let workflow = try parse(
            """
            steps:
              - { id: bad, url: "http://x.test/bad", expect: 200 }
              - { id: after, url: "http://x.test/after", needs: bad }
              - { id: later, url: "http://x.test/later", needs: after }
              - { id: other, url: "http://x.test/other" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["bad"]?.state == .failed)
        #expect(report["bad"]?.error == "expected 200, got 404: no such thing")
        #expect(report["after"]?.state == .skipped && report["after"]?.cause == "bad")
        #expect(report["later"]?.state == .skipped)
        #expect(report["other"]?.state == .succeeded)
        #expect(!report.allSucceeded)
    }

    /// With `failure: continue`, a run cancelled (Ctrl-C) after one step failed reports the
    /// steps still running as cancelled, not as skipped because of that failure.
    @Test func aCancelledRunDoesNotBlameAnUnrelatedFailure() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/slow" { try await gate.pass() }
            return request.path == "/bad" ? respond(404) : respond()
        }
        let workflow = try parse(
            """
            steps:
              - { id: bad, url: "http://x.test/bad", expect: 200 }
              - { id: slow, url: "http://x.test/slow" }
              - { id: after, url: "http://x.test/after", needs: slow }
            """)
        let finished = Locked([String]())
        try await withHangGuard {
            let run = Task {
                await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock()) { event in
                    if case .finished(let step) = event { finished.withLock { $0.append(step.id) } }
                }
            }
            try await waitUntil("bad failed while slow waits") {
                finished.withLock { $0 } == ["bad"] && transport.inFlight == 1
            }
            run.cancel()
            let report = await run.value
            #expect(report["bad"]?.state == .failed)
            for id in ["slow", "after"] {
                #expect(report[id]?.state == .cancelled, "\(id): \(String(describing: report[id]))")
                #expect(
                    report[id]?.error?.contains("bad") == false,
                    "\(id) did not fail because of 'bad': \(report[id]?.error ?? "")")
            }
        }
    }

    @Test func stopCancelsRunningStepsAndSkipsTheRest() async throws {
        let arrivals = EventLog<String>()
        let transport = ScriptedHTTPTransport { request, _ in
            arrivals.append(request.path!)
            switch request.path {
            case "/slow":
                try await AsyncEvent().wait()  // never answers; ends when cancelled
                return respond()
            case "/bad":
                try await waitUntil("slow is in flight") { arrivals.events.contains("/slow") }
                return respond(500, "boom")
            default: return respond()
            }
        }
        let workflow = try parse(
            """
            failure: stop
            steps:
              - { id: bad, url: "http://x.test/bad" }
              - { id: slow, url: "http://x.test/slow" }
              - { id: after, url: "http://x.test/after", needs: bad }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["bad"]?.state == .failed)
        #expect(report["slow"]?.state == .cancelled, "\(String(describing: report["slow"]))")
        #expect(report["after"]?.state == .skipped)
        #expect(!arrivals.events.contains("/after"))
    }

    @Test func retriesHonourRetryAfterOnTheInjectedClock() async throws {
        let clock = ManualClock()
        let calls = Locked(0)
        let transport = ScriptedHTTPTransport { _, _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            return call <= 2 ? respond(503, "", headers: [.retryAfter: "1"]) : respond(200, "fine")
        }
        let workflow = try parse(
            "steps:\n  - { id: flaky, url: \"http://x.test/f\", retry: { attempts: 3, backoff: 100ms }, timeout: 60s }\n"
        )
        try await withHangGuard {
            async let report = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            for attempt in 1...2 {
                try await waitUntil("backoff \(attempt) asleep") {
                    transport.requests.count == attempt
                        && clock.pendingSleepers.contains(clock.now.advanced(by: .seconds(1)))
                }
                clock.advance(by: .seconds(1))
            }
            let result = await report
            #expect(result["flaky"]?.state == .succeeded)
            #expect(result["flaky"]?.attempts == 3)
            #expect(result["flaky"]?.status == 200)
        }
    }

    @Test func eachAttemptIsLimitedByTheStepTimeout() async throws {
        let clock = ManualClock()
        let transport = ScriptedHTTPTransport { _, _ in
            try await AsyncEvent().wait()  // never answers; cancelled by the timeout
            return respond()
        }
        let workflow = try parse(
            "steps:\n  - { id: slow, url: \"http://x.test/hang\", timeout: 2s, retry: { attempts: 2, backoff: 100ms } }\n"
        )
        try await withHangGuard {
            async let report = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await waitUntil("attempt 1 timing") {
                transport.requests.count == 1 && clock.pendingSleepers.contains(clock.now.advanced(by: .seconds(2)))
            }
            clock.advance(by: .seconds(2))
            try await waitUntil("backoff") {
                clock.pendingSleepers.contains(clock.now.advanced(by: .milliseconds(100)))
            }
            clock.advance(by: .milliseconds(100))
            try await waitUntil("attempt 2 timing") {
                transport.requests.count == 2 && clock.pendingSleepers.contains(clock.now.advanced(by: .seconds(2)))
            }
            clock.advance(by: .seconds(2))
            let result = await report
            #expect(result["slow"]?.state == .failed)
            #expect(result["slow"]?.error == "timed out after 2 s (after 2 attempts)")
        }
    }

    @Test func manyParallelStepsShareOneLoginAndOneRefresh() async throws {
        let counts = Locked((logins: 0, refreshes: 0))
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path {
            case "/login":
                counts.withLock { $0.logins += 1 }
                return respond(200, #"{"access_token":"t1","expires_in":3600}"#)
            case "/refresh":
                counts.withLock { $0.refreshes += 1 }
                return respond(200, #"{"access_token":"t2","expires_in":3600}"#)
            default:
                // t1 has expired on the server: only t2 is accepted.
                return request.headerFields[.authorization] == "Bearer t2"
                    ? respond(200, #"{"ok":1}"#) : respond(401, #"{"error":"token_expired"}"#)
            }
        }
        let steps = (0..<30).map { "  - { id: s\($0), url: \"http://x.test/data/\($0)\" }" }
        let workflow = try parse(
            """
            limit: 30
            auth:
              login: { url: "http://x.test/login", token: $.access_token, expires_in: $.expires_in }
              refresh: { url: "http://x.test/refresh", token: $.access_token }
            steps:
            """ + "\n" + steps.joined(separator: "\n"))
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded)
        #expect(counts.withLock { $0 } == (1, 1))
        #expect(report.logins == 1 && report.refreshes == 1)
    }

    /// `failure: { status: [200] }` makes every answer a refusal: the coordinator refreshes,
    /// re-sends, gives up and returns the last 200, which must fail the step, not pass it.
    @Test func aResponseThatStillRefusesTheTokenFailsTheStep() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path {
            case "/login": respond(200, #"{"access_token":"t"}"#)
            default: respond(200, #"{"ok":1}"#)
            }
        }
        let workflow = try parse(
            """
            auth:
              login: { url: "http://x.test/login", token: $.access_token }
              failure: { status: [200] }
            steps:
              - { id: records, url: "http://x.test/data" }
              - { id: open, url: "http://x.test/open", auth: false }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        let data = try #require(report["records"])
        #expect(data.state == .failed)
        #expect(
            data.error?.contains("still refused the token") == true && data.error?.contains("status 200") == true,
            "\(data.error ?? "")")
        #expect(report["open"]?.state == .succeeded, "a step without auth is not judged by the auth block")
        #expect(report.logins + report.refreshes >= 2, "it was refreshed before it failed")
    }

    @Test func capturesAreCheckedAndHeadersRefuseLineBreaks() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path {
            case "/text": respond(200, "not json")
            case "/image": respond(200, String(repeating: "x", count: 4_000), headers: [.contentType: "image/png"])
            case "/bytes": (HTTPResponse(status: .ok), Data([0x89, 0x50, 0x4E, 0x47, 0xFF, 0xFE, 0x00, 0x01]))
            case "/problem":
                respond(422, #"{"error":"bad id"}"#, headers: [.contentType: "application/problem+json; charset=utf-8"])
            default: respond(200, #"{"a":"line\nbreak"}"#)
            }
        }
        let workflow = try parse(
            """
            steps:
              - { id: text, url: "http://x.test/text", captures: { v: $.v } }
              - { id: json, url: "http://x.test/json", captures: { a: $.a, missing: $.b } }
              - { id: source, url: "http://x.test/source", captures: { a: $.a } }
              - { id: header, url: "http://x.test/header", headers: { X-A: "{{source.a}}" } }
              - { id: image, url: "http://x.test/image", captures: { v: $.v } }
              - { id: bytes, url: "http://x.test/bytes", captures: { v: $.v } }
              - { id: problem, url: "http://x.test/problem" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["text"]?.error?.contains("is not JSON, so the captures v cannot be read") == true)
        #expect(report["json"]?.error?.hasPrefix("capture 'missing': $.b not found in the response") == true)
        #expect(report["source"]?.captures == [JSONValue.Member("a", .string("line\nbreak"))])
        #expect(report["header"]?.error?.contains("header 'X-A' would contain a line break") == true)
        // A body that is not text is described, not quoted.
        #expect(
            report["image"]?.error?.hasSuffix("cannot be read: (4000 bytes of image/png)") == true,
            "\(String(describing: report["image"]?.error))")
        #expect(
            report["bytes"]?.error?.hasSuffix("cannot be read: (8 bytes of binary data)") == true,
            "\(String(describing: report["bytes"]?.error))")
        #expect(report["problem"]?.error == #"expected 2xx, got 422: {"error":"bad id"}"#)
        #expect(!transport.requests.contains { $0.path == "/header" })
    }

    @Test func aRefusedConnectionFailsItsStepAndTheOthersComplete() async throws {
        try await withDemoServer { server in
            let workflow = try parse(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - { id: refused, url: "http://127.0.0.1:1/album", timeout: 20s }
                  - { id: album, url: "{{vars.base}}/album", captures: { first: "$.images[0].path" } }
                  - { id: image, url: "{{vars.base}}{{album.first | raw}}?latency_ms=1" }
                """)
            let report = await WorkflowRunner(workflow: workflow).run()
            #expect(report["refused"]?.state == .failed)
            #expect(
                report["refused"]?.error == "connection refused by 127.0.0.1:1",
                "\(String(describing: report["refused"]?.error))")
            #expect(report["album"]?.state == .succeeded)
            #expect(report["image"]?.state == .succeeded)
            #expect(report["image"]?.url.hasSuffix("/images/0?latency_ms=1") == true)
            #expect(server.arrivals(of: "/images/0") == 1)
        }
    }
}
