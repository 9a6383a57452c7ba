import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// Redirects, the `for_each` window, the User-Agent and report times: the runner as a client
/// of the coordinator.
@Suite("WorkflowRunner: redirects and windows", .timeLimit(.minutes(1)), .takesTurns)
struct RedirectAndWindowTests {
    static func redirect(_ status: Int, to location: String, cookie: String? = nil) -> (HTTPResponse, Data) {
        var headers = HTTPFields()
        headers[.location] = location
        if let cookie { headers[.setCookie] = cookie }
        return respond(status, "moved", headers: headers)
    }

    @Test func aStepThatDoesNotFollowRedirectsSeesTheRedirectAndCapturesItsHeaders() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            request.path == "/login" ? Self.redirect(302, to: "/home", cookie: "session=abc") : respond()
        }
        let workflow = try parse(
            """
            steps:
              - id: login
                url: "http://x.test/login"
                method: POST
                follow_redirects: false
                expect: 302
                captures: { next: { header: Location }, cookie: { header: Set-Cookie } }
              - { id: home, url: "http://x.test{{login.next | raw}}", headers: { Cookie: "{{login.cookie}}" } }
            """)
        let report = await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        #expect(report.allSucceeded, "\(report.steps.map { "\($0.id): \($0.error ?? "ok")" })")
        #expect(report["login"]?.status == 302 && report["login"]?.redirects == [])
        #expect(transport.requests.map(\.path) == ["/login", "/home"])
        #expect(transport.requests.last?.headerFields[.cookie] == "session=abc")
    }

    @Test func redirectsAreFollowedByDefaultAndReported() async throws {
        let transport = ScriptedHTTPTransport { request, body in
            switch request.path {
            case "/upload": return Self.redirect(307, to: "/stored")
            case "/stored": return respond(201, String(decoding: body ?? Data(), as: UTF8.self))
            default: return respond(404)
            }
        }
        let workflow = try parse(
            """
            steps:
              - { id: upload, url: "http://x.test/upload", method: POST, body: "the body", captures: { echoed: $.x } }
            """.replacingOccurrences(of: "\"the body\"", with: #"{ x: "kept" }"#))
        let report = await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        let upload = try #require(report["upload"])
        #expect(upload.state == .succeeded && upload.status == 201)
        #expect(upload.redirects == [HTTPRedirect(status: 307, location: "http://x.test/stored")])
        #expect(upload.captures.first?.value == .string("kept"), "the 307 re-sent the POST body")
        #expect(upload.attempts == 1, "a redirect followed is not a second attempt")
    }

    @Test func aTooLongChainFailsTheStepNamingTheCountAndTheLastLocation() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            let n = Int(request.path!.dropFirst(3))!  // "/r/N"
            return Self.redirect(302, to: "/r/\(n + 1)")
        }
        let workflow = try parse(#"steps: [{ id: loop, url: "http://x.test/r/0" }]"#)
        let report = await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        let loop = try #require(report["loop"])
        #expect(loop.state == .failed)
        #expect(
            loop.error?.contains("too many redirects") == true && loop.error?.contains("http://x.test/r/11") == true)
        #expect(loop.attempts == 1 && loop.error?.contains("attempts") == false, "\(loop.error ?? "")")
        #expect(loop.redirects.count == 11)
        #expect(transport.requests.count == 11)
    }

    @Test func theWorkflowLevelSettingAppliesToEveryStepThatDoesNotSayOtherwise() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            request.path!.hasPrefix("/a") || request.path!.hasPrefix("/b") ? Self.redirect(301, to: "/end") : respond()
        }
        let workflow = try parse(
            """
            follow_redirects: false
            steps:
              - { id: a, url: "http://x.test/a", expect: 301 }
              - { id: b, url: "http://x.test/b", follow_redirects: true }
            """)
        let report = await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        #expect(report.allSucceeded)
        #expect(report["a"]?.status == 301 && report["b"]?.status == 200 && report["b"]?.redirects.count == 1)
    }

    @Test func everyRequestCarriesTheRunnersUserAgentUnlessTheStepSetsOne() async throws {
        let transport = ScriptedHTTPTransport { _, _ in respond() }
        let workflow = try parse(
            """
            steps:
              - { id: plain, url: "http://x.test/a" }
              - { id: own, url: "http://x.test/b", headers: { User-Agent: "mine/1" } }
            """)
        _ = await WorkflowRunner(workflow: workflow, transport: transport, userAgent: "orchestra/9.9").run(
            clock: ManualClock())
        let agents = Dictionary(
            uniqueKeysWithValues: transport.requests.map { ($0.path!, $0.headerFields[.userAgent]) })
        #expect(agents == ["/a": "orchestra/9.9", "/b": "mine/1"])
    }

    /// With `limit: 1` the window is 17 elements (`limit` + 16, as the graph's; it was 16, a
    /// formula of its own): while the element holding the one slot is held, at most 17 have
    /// started and the rest start only as elements end, so a list of any length never makes
    /// more than 17 tasks.
    @Test func forEachStartsABoundedWindowOfElements() async throws {
        let gate = AsyncGate(isOpen: false)
        let clock = ManualClock()
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/album" { return respond(200, ForEachRunnerTests.album(100)) }
            // Every element is held, not only the first: whichever element gets the slot
            // first, none can end (and make room in the window) before the gate opens.
            try await gate.pass()
            return respond()
        }
        let workflow = try ForEachRunnerTests.workflow(limit: 1)
        let window = WorkflowLimits(limit: 1).forEachWindow
        #expect(window == 17)
        try await withHangGuard {
            async let report = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await waitUntil("an element in flight") { transport.inFlight == 1 && transport.requests.count == 2 }
            clock.advance(by: .seconds(1))
            gate.open()
            let result = await report
            let items = try #require(result["image"]?.items)
            #expect(items.count == 100 && items.allSatisfy { $0.state == .succeeded })
            // Element 17 and later can start only once an element ended, which needs the gate.
            #expect(items[window...].allSatisfy { ($0.started ?? .zero) >= .seconds(1) })
            // At most the window before the clock moved: how many of it had started by then
            // depends on the machine's speed (3 of 17 in a ThreadSanitizer run).
            #expect((1...window).contains(items.count { $0.started == .zero }))
            #expect(result["image"]?.itemCounts?.succeeded == 100)
        }
        #expect(transport.peakInFlight == 1)
    }

    @Test func withoutItemReportsOnlyTheElementsThatDidNotSucceedAreKept() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/album" { return respond(200, ForEachRunnerTests.album(50)) }
            return request.path!.hasPrefix("/images/7?") ? respond(404) : respond()
        }
        let workflow = try ForEachRunnerTests.workflow(limit: 4)
        let report = await WorkflowRunner(workflow: workflow, transport: transport, keepsItemReports: false).run(
            clock: ManualClock())
        let image = try #require(report["image"])
        #expect(image.items?.map(\.id) == ["image[7]"])
        #expect(
            image.itemCounts
                == {
                    var counts = StepReport.ItemCounts()
                    counts.total = 50
                    counts.sent = 50
                    counts.succeeded = 49
                    counts.failed = 1
                    return counts
                }())
        #expect(image.attempts == 50)
        #expect(image.error?.contains("1 of 50 requests failed; first: image[7]") == true)
    }

    /// Each element's interval is taken while it holds its slot: with `limit: 2`, no instant
    /// of the report has more than two elements in flight. The clock ticks on every reading,
    /// so the report's times order every start and end exactly as they happened.
    @Test func reportIntervalsNeverShowMoreInFlightThanTheLimit() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/album" { return respond(200, ForEachRunnerTests.album(40)) }
            await Task.yield()
            return respond()
        }
        let workflow = try ForEachRunnerTests.workflow(limit: 2)
        let report = await WorkflowRunner(workflow: workflow, transport: transport).run(clock: TickingClock())
        let items = try #require(report["image"]?.items)
        #expect(items.count == 40)
        var edges: [(Duration, Int)] = []
        for item in items {
            edges.append((try #require(item.firstSent), 1))
            edges.append((try #require(item.ended), -1))
        }
        edges.sort { $0.0 < $1.0 }
        var inFlight = 0
        var peak = 0
        for edge in edges {
            inFlight += edge.1
            peak = max(peak, inFlight)
        }
        #expect(peak <= 2)
        #expect(transport.peakInFlight <= 2)
    }
}

/// A clock whose every reading is one microsecond after the previous one; its sleeps end only
/// by cancellation (nothing in these tests waits for time to pass).
struct TickingClock: Clock {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let ticks = Locked<Int64>(0)

    var now: Instant {
        Instant(
            offset: .microseconds(
                ticks.withLock {
                    $0 += 1
                    return $0
                }))
    }
    var minimumResolution: Duration { .microseconds(1) }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await AsyncEvent().wait()
    }
}
