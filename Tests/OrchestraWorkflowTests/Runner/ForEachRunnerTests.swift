import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

@Suite("WorkflowRunner: for_each", .timeLimit(.minutes(1)), .takesTurns)
struct ForEachRunnerTests {
    /// `album` answers `list` (JSON text); `image` fans out over it; `done` needs `image`.
    static func workflow(limit: Int = 8, captures: Bool = false) throws -> Workflow {
        try parse(
            """
            limit: \(limit)
            steps:
              - { id: album, url: "http://x.test/album", captures: { images: $.images } }
              - id: image
                for_each: "{{album.images}}"
                url: "http://x.test{{item.path | raw}}?name={{item.name}}&i={{index}}"
                headers: { X-Index: "{{index}}" }
            \(captures ? "    captures: { size: $.bytes }" : "")
              - { id: done, url: "http://x.test/done", body: { sizes: "\(captures ? "{{image.size}}" : "none")" }, method: POST, needs: [image] }
            """)
    }

    static func album(_ count: Int) -> String {
        let images = (0..<count).map { #"{"path":"/images/\#($0)","name":"n \#($0)"}"# }
        return #"{"images":[\#(images.joined(separator: ","))]}"#
    }

    @Test func eachElementIsOneRequestAllInParallelWithinTheLimit() async throws {
        let gate = AsyncGate(isOpen: false)
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/album" { return respond(200, Self.album(5)) }
            if request.path!.hasPrefix("/images/") { try await gate.pass() }
            return respond()
        }
        let workflow = try Self.workflow(limit: 3)
        try await withHangGuard {
            async let report = WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
            try await waitUntil("three elements in flight, the limit") { transport.inFlight == 3 }
            #expect(transport.requests.count == 4, "the album and three elements; two wait for a slot")
            gate.open()
            let result = await report
            #expect(result.allSucceeded)
            let image = try #require(result["image"])
            #expect(image.items?.map(\.id) == (0..<5).map { "image[\($0)]" })
            #expect(image.items?.map(\.url) == (0..<5).map { "http://x.test/images/\($0)?name=n%20\($0)&i=\($0)" })
            #expect(image.items?.allSatisfy { $0.state == .succeeded && $0.status == 200 && $0.attempts == 1 } == true)
            #expect(image.attempts == 5 && image.status == nil)
            #expect(image.url == "http://x.test{{item.path | raw}}?name={{item.name}}&i={{index}}")
        }
        #expect(transport.peakInFlight == 3)
        let sent = transport.requests.filter { $0.path!.hasPrefix("/images/") }
        #expect(Set(sent.map(\.path)) == Set((0..<5).map { "/images/\($0)?name=n%20\($0)&i=\($0)" }))
        #expect(Set(sent.compactMap { $0.headerFields[HTTPField.Name("X-Index")!] }) == ["0", "1", "2", "3", "4"])
        #expect(transport.requests.last?.path == "/done")
    }

    @Test func progressCountsEachEndedElementBeforeTheStepEnds() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            request.path == "/album" ? respond(200, Self.album(5)) : respond()
        }
        let workflow = try Self.workflow()
        let events = EventLog<String>()
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock()) { event in
                switch event {
                case .started(let step): events.append("start \(step)")
                case .progress(let step, let finished, let total, _): events.append("\(step) \(finished)/\(total)")
                case .finished(let report): events.append("end \(report.id)")
                }
            }
        }
        #expect(report.allSucceeded)
        let image = events.events.filter { $0.hasPrefix("image ") || $0.hasSuffix(" image") }
        #expect(image == ["start image"] + (0...5).map { "image \($0)/5" } + ["end image"])
        #expect(
            !events.events.contains { $0.hasPrefix("album ") || $0.hasPrefix("done ") },
            "only a for_each step reports progress")
    }

    @Test func hostLimitsAndRetriesApplyToEachElement() async throws {
        let gate = AsyncGate(isOpen: false)
        let calls = Locked([String: Int]())
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/album" { return respond(200, Self.album(4)) }
            let call = calls.withLock {
                $0[request.path!, default: 0] += 1
                return $0[request.path!]!
            }
            try await gate.pass()
            return request.path == "/images/2" && call == 1 ? respond(503, "busy") : respond()
        }
        let workflow = try parse(
            """
            hosts: { x.test: 2 }
            steps:
              - { id: album, url: "http://x.test/album", captures: { images: $.images } }
              - { id: image, for_each: "{{album.images}}", url: "http://x.test{{item.path | raw}}", retry: { attempts: 2, backoff: 0s } }
            """)
        try await withHangGuard {
            async let report = WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
            try await waitUntil("two elements in flight, the host's limit") { transport.inFlight == 2 }
            gate.open()
            let result = await report
            #expect(result.allSucceeded)
            #expect(result["image"]?.items?.map(\.attempts) == [1, 1, 2, 1])
            #expect(result["image"]?.attempts == 5)
        }
        #expect(transport.peakInFlight(host: "x.test") == 2)
    }

    @Test func aFailingElementLetsTheOthersFinishAndFailsTheStep() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path! {
            case "/album": return respond(200, Self.album(6))
            case let path where path.hasPrefix("/images/3") || path.hasPrefix("/images/5"):
                return respond(404, "no image")
            default: return respond()
            }
        }
        let workflow = try Self.workflow()
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        let image = try #require(report["image"])
        #expect(image.state == .failed)
        #expect(image.error == "2 of 6 requests failed; first: image[3]: expected 2xx, got 404: no image")
        #expect(image.items?.map(\.state) == [.succeeded, .succeeded, .succeeded, .failed, .succeeded, .failed])
        #expect(image.items?[5].error == "expected 2xx, got 404: no image")
        #expect(transport.requests.filter { $0.path!.hasPrefix("/images/") }.count == 6, "no element is cancelled")
        #expect(report["done"]?.state == .skipped && report["done"]?.cause == "image")
    }

    @Test func stopCancelsTheElementsInFlight() async throws {
        let arrivals = EventLog<String>()
        let transport = ScriptedHTTPTransport { request, _ in
            arrivals.append(request.path!)
            switch request.path! {
            case "/album": return respond(200, Self.album(3))
            case "/bad":
                try await waitUntil("the elements are in flight") {
                    arrivals.events.count { $0.hasPrefix("/images/") } == 3
                }
                return respond(500, "boom")
            default:
                try await AsyncEvent().wait()  // never answers; ends when cancelled
                return respond()
            }
        }
        let workflow = try parse(
            """
            failure: stop
            steps:
              - { id: album, url: "http://x.test/album", captures: { images: $.images } }
              - { id: image, for_each: "{{album.images}}", url: "http://x.test{{item.path | raw}}" }
              - { id: bad, url: "http://x.test/bad", needs: album }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["bad"]?.state == .failed)
        #expect(report["image"]?.state == .cancelled)
        #expect(report["image"]?.items?.map(\.state) == [.cancelled, .cancelled, .cancelled])
    }

    @Test func anEmptyListSucceedsWithoutSending() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            request.path == "/album" ? respond(200, #"{"images":[]}"#) : respond()
        }
        let workflow = try Self.workflow(captures: true)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded)
        #expect(report["image"]?.items == [])
        #expect(report["image"]?.captures == [JSONValue.Member("size", .array([]))])
        #expect(transport.requests.map(\.path) == ["/album", "/done"])
    }

    @Test(arguments: [
        (#"{"images":{"a":1}}"#, "for_each: {{album.images}} is an object, not a list"),
        (#"{"images":"/images/0"}"#, "for_each: {{album.images}} is a string, not a list"),
        (#"{"images":null}"#, "for_each: {{album.images}} is null, not a list"),
    ])
    func aValueThatIsNotAListFailsTheStep(body: String, reason: String) async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            request.path == "/album" ? respond(200, body) : respond()
        }
        let workflow = try Self.workflow()
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["image"]?.state == .failed)
        #expect(report["image"]?.error == reason)
        #expect(report["done"]?.state == .skipped)
        #expect(transport.requests.map(\.path) == ["/album"])
    }

    @Test func capturesBecomeArraysInElementOrderForLaterSteps() async throws {
        let doneBody = Locked<String?>(nil)
        let transport = ScriptedHTTPTransport { request, body in
            if request.path == "/album" { return respond(200, Self.album(3)) }
            if let path = request.path, path.hasPrefix("/images/") {
                let index = Int(String(path.dropFirst("/images/".count).prefix { $0.isNumber }))!
                return respond(200, #"{"bytes":\#(100 + index)}"#)
            }
            doneBody.withLock { $0 = String(decoding: body ?? Data(), as: UTF8.self) }
            return respond()
        }
        let workflow = try Self.workflow(captures: true)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded)
        #expect(
            report["image"]?.captures == [
                JSONValue.Member("size", .array([.integer(100), .integer(101), .integer(102)]))
            ])
        #expect(
            report["image"]?.items?.map { $0.captures }
                == (0..<3).map { [JSONValue.Member("size", .integer(100 + $0))] })
        #expect(transport.requests.last?.path == "/done")
        #expect(doneBody.withLock { $0 } == #"{"sizes":[100,101,102]}"#)
    }
}
