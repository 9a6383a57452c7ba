import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// `until:`: a step sent again until its checks hold, waiting on the run's clock between
/// attempts (a `ManualClock` here: nothing sleeps for real), within `max_attempts` and the
/// step's timeout over the whole poll.
@Suite("WorkflowRunner: until", .timeLimit(.minutes(1)), .takesTurns)
struct UntilRunnerTests {
    /// A transport whose `/jobs/NAME` answers running until its `done`th call for that name.
    static func jobs(done: Int) -> ScriptedHTTPTransport {
        let calls = Locked([String: Int]())
        return ScriptedHTTPTransport { request, _ in
            let path = request.path ?? ""
            guard path.hasPrefix("/jobs/") else { return respond(200, #"{"ok":true}"#) }
            let call = calls.withLock {
                $0[path, default: 0] += 1
                return $0[path]!
            }
            return call >= done
                ? respond(200, #"{"status":"done","polls":\#(call),"result":"r-\#(path.dropFirst(6))"}"#)
                : respond(200, #"{"status":"running","polls":\#(call)}"#)
        }
    }

    static let poll = """
        steps:
          - id: job
            url: "http://x.test/jobs/a"
            until: { interval: 1s, max_attempts: 5 }
            timeout: 60s
            assert:
              - $.status: done
            captures: { result: $.result, polls: $.polls }
        """

    /// Advances `clock` by `interval` each time a poll is asleep for it, `times` times.
    static func drive(
        _ clock: ManualClock, _ transport: ScriptedHTTPTransport, waits: [Duration]
    ) async throws {
        for (index, wait) in waits.enumerated() {
            try await waitUntil("poll asleep before attempt \(index + 2)") {
                transport.requests.count == index + 1
                    && clock.pendingSleepers.contains(clock.now.advanced(by: wait))
            }
            clock.advance(by: wait)
        }
    }

    @Test func aStepIsSentAgainUntilItsAssertionsHoldAndCapturesFromTheLastResponse() async throws {
        let clock = ManualClock()
        let transport = Self.jobs(done: 3)
        let workflow = try parse(Self.poll)
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await Self.drive(clock, transport, waits: [.seconds(1), .seconds(1)])
            let report = await run
            let job = try #require(report["job"])
            #expect(job.state == .succeeded, "\(job.error ?? "")")
            #expect(transport.requests.count == 3 && job.attempts == 3 && job.pollCount == 3)
            #expect(job.captures.map(\.value) == [.string("r-a"), .integer(3)], "captures from the last response")
            #expect(job.polls.map(\.number) == [1, 2, 3])
            #expect(job.polls.map(\.passed) == [false, false, true])
            #expect(job.polls.map(\.status) == [200, 200, 200])
            #expect(job.polls[0].failure?.contains(#"got "running""#) == true, "\(job.polls[0])")
            #expect(job.polls.map(\.sent) == [.zero, .seconds(1), .seconds(2)])
            let allPassed = job.assertions.allSatisfy { $0.passed }
            #expect(allPassed, "the last attempt's checks")
            #expect(clock.pendingSleepers.isEmpty)
        }
    }

    @Test func aPollThatNeverSucceedsNamesTheLastFailedCheckAndTheAttempts() async throws {
        let clock = ManualClock()
        let transport = Self.jobs(done: 100)
        let workflow = try parse(Self.poll.replacingOccurrences(of: "max_attempts: 5", with: "max_attempts: 3"))
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await Self.drive(clock, transport, waits: [.seconds(1), .seconds(1)])
            let job = try #require(await run["job"])
            #expect(job.state == .failed)
            let error = job.error ?? ""
            #expect(
                error.hasPrefix("until: the checks still failed after 3 attempts (max_attempts: 3); last: "), "\(error)"
            )
            #expect(error.contains(#"$.status == "done": got "running""#), "\(error)")
            #expect(transport.requests.count == 3 && job.pollCount == 3)
        }
    }

    @Test func theStepsTimeoutBoundsTheWholePoll() async throws {
        let clock = ManualClock()
        let transport = Self.jobs(done: 100)
        let workflow = try parse(
            Self.poll.replacingOccurrences(
                of: "until: { interval: 1s, max_attempts: 5 }", with: "until: { interval: 1s }"
            )
            .replacingOccurrences(of: "timeout: 60s", with: "timeout: 2500ms"))
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await Self.drive(clock, transport, waits: [.seconds(1), .seconds(1)])
            let job = try #require(await run["job"])
            #expect(job.state == .failed)
            #expect(
                job.error?.hasPrefix(
                    "until: the checks still failed after 3 attempts; the next would start after the step's timeout (2.5 s over the whole poll)"
                ) == true, "\(job.error ?? "")")
            #expect(transport.requests.count == 3)
        }
    }

    @Test func anIntervalWithAMultiplierBacksOffUpToItsMax() async throws {
        let clock = ManualClock()
        let transport = Self.jobs(done: 5)
        let workflow = try parse(
            Self.poll.replacingOccurrences(
                of: "until: { interval: 1s, max_attempts: 5 }",
                with: "until: { interval: { initial: 1s, multiplier: 2, max: 3s } }"))
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await Self.drive(clock, transport, waits: [.seconds(1), .seconds(2), .seconds(3), .seconds(3)])
            let job = try #require(await run["job"])
            #expect(job.state == .succeeded)
            #expect(job.polls.map(\.sent) == [0, 1, 3, 6, 9].map { Duration.seconds($0) })
        }
    }

    /// With `limit: 1`, two polls can both be asleep after their first attempt only if a
    /// waiting poll holds no slot: the second poll's first request is sent during the first
    /// one's wait.
    @Test func aWaitingPollHoldsNoSlotOfTheLimit() async throws {
        let clock = ManualClock()
        let transport = Self.jobs(done: 3)
        let workflow = try parse(
            """
            limit: 1
            steps:
              - { id: a, url: "http://x.test/jobs/a", until: { interval: 1s }, assert: [ { $.status: done } ] }
              - { id: b, url: "http://x.test/jobs/b", until: { interval: 1s }, assert: [ { $.status: done } ] }
            """)
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            for round in 1...2 {
                try await waitUntil("both polls asleep after round \(round)") {
                    transport.requests.count == 2 * round
                        && clock.pendingSleepers.filter { $0 == clock.now.advanced(by: .seconds(1)) }.count == 2
                }
                clock.advance(by: .seconds(1))
            }
            let report = await run
            #expect(report.allSucceeded)
            #expect(report["a"]?.pollCount == 3 && report["b"]?.pollCount == 3)
        }
    }

    @Test func aForEachStepPollsEachElement() async throws {
        let clock = ManualClock()
        let transport = Self.jobs(done: 2)
        let workflow = try parse(
            """
            steps:
              - { id: list, url: "http://x.test/list", captures: { ids: $.ids } }
              - id: job
                for_each: "{{list.ids}}"
                url: "http://x.test/jobs/{{item}}"
                until: { interval: 1s, max_attempts: 3 }
                assert: [ { $.status: done } ]
                captures: { result: $.result }
            """)
        let listing = ScriptedHTTPTransport { request, body in
            if request.path == "/list" { return respond(200, #"{"ids":["x","y"]}"#) }
            return try await transport.send(request, body: body)
        }
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: listing).run(clock: clock)
            try await waitUntil("both elements asleep") {
                listing.requests.count == 3
                    && clock.pendingSleepers.filter { $0 == clock.now.advanced(by: .seconds(1)) }.count == 2
            }
            clock.advance(by: .seconds(1))
            let job = try #require(await run["job"])
            #expect(job.state == .succeeded, "\(job.error ?? "")")
            #expect(job.items?.map(\.pollCount) == [2, 2])
            #expect(job.captures.first?.value == .array([.string("r-x"), .string("r-y")]))
        }
    }

    /// A failed connection after the step's retries is not a check: the poll ends at once.
    @Test func aRequestThatFailsEndsThePollAtOnce() async throws {
        let transport = ScriptedHTTPTransport { _, _ in
            throw HTTPTransportError(code: .connectionRefused, message: "refused")
        }
        let workflow = try parse(Self.poll)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        let job = try #require(report["job"])
        #expect(job.state == .failed)
        #expect(transport.requests.count == 1 && job.pollCount == 0, "\(job.error ?? "")")
        #expect(job.error?.hasPrefix("until:") == false, "\(job.error ?? "")")
    }

    /// A server that echoes a secret in the responses that fail the checks: every attempt's
    /// reason in the report is masked.
    @Test func aSecretInAFailedAttemptIsMasked() async throws {
        let clock = ManualClock()
        let transport = ScriptedHTTPTransport { _, _ in respond(200, #"{"status":"running","echo":"s3cr3t-value"}"#) }
        let workflow = try parse(
            """
            vars: { key: "s3cr3t-value" }
            secrets: [key]
            steps:
              - id: job
                url: "http://x.test/jobs/a?key={{vars.key}}"
                until: { interval: 1s, max_attempts: 2 }
                assert: [ { $.echo: other } ]
            """)
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await Self.drive(clock, transport, waits: [.seconds(1)])
            let job = try #require(await run["job"])
            #expect(job.polls.count == 2)
            for text in job.polls.compactMap(\.failure) + [job.error ?? "", job.url] {
                #expect(!text.contains("s3cr3t-value") && text.contains("***"), "\(text)")
            }
        }
    }

    /// 1,000 attempts (10× a long poll): the report keeps the last 100 and counts them all.
    @Test func aLongPollKeepsTheLastAttemptsAndCountsThemAll() async throws {
        let transport = Self.jobs(done: .max)
        let workflow = try parse(
            Self.poll.replacingOccurrences(
                of: "until: { interval: 1s, max_attempts: 5 }", with: "until: { interval: 0s, max_attempts: 1000 }"))
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        let job = try #require(report["job"])
        #expect(job.state == .failed && job.pollCount == 1_000 && transport.requests.count == 1_000)
        #expect(job.polls.count == StepPoll.reportedAttempts)
        #expect(job.polls.first?.number == 901 && job.polls.last?.number == 1_000)
    }

    /// An attempt that never answers is cut where the whole poll's timeout ends, not a whole
    /// `timeout` after it started.
    @Test func anAttemptGetsWhatIsLeftOfTheTimeout() async throws {
        let clock = ManualClock()
        let calls = Locked(0)
        let transport = ScriptedHTTPTransport { _, _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            if call == 2 { try await AsyncEvent().wait() }  // never answers; cancelled by the timeout
            return respond(200, #"{"status":"running"}"#)
        }
        let workflow = try parse(
            Self.poll.replacingOccurrences(
                of: "until: { interval: 1s, max_attempts: 5 }", with: "until: { interval: 1s }"
            )
            .replacingOccurrences(of: "timeout: 60s", with: "timeout: 3s"))
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await Self.drive(clock, transport, waits: [.seconds(1)])
            try await waitUntil("attempt 2 timed by what is left: 2 s") {
                transport.requests.count == 2 && clock.pendingSleepers.contains(clock.now.advanced(by: .seconds(2)))
            }
            clock.advance(by: .seconds(2))
            let job = try #require(await run["job"])
            #expect(job.state == .failed)
            #expect(
                job.error?.hasPrefix(
                    "until: the step's timeout (3 s over the whole poll) ended during attempt 2: timed out after 2 s")
                    == true,
                "\(job.error ?? "")")
        }
    }

    /// A `202` that says when to look again (`Retry-After: 5`) sets the next wait, at most the
    /// poll's `max` (10 s here for `Retry-After: 3600`).
    @Test func aRetryAfterOnAResponseThatDoesNotPassSetsTheNextWait() async throws {
        let clock = ManualClock()
        let calls = Locked(0)
        let transport = ScriptedHTTPTransport { _, _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            switch call {
            case 1: return respond(202, #"{"status":"running"}"#, headers: [.retryAfter: "5"])
            case 2: return respond(202, #"{"status":"running"}"#, headers: [.retryAfter: "3600"])
            default: return respond(200, #"{"status":"done"}"#)
            }
        }
        let workflow = try parse(
            """
            steps:
              - id: job
                url: "http://x.test/jobs/a"
                expect: 200
                until: { interval: { initial: 1s, multiplier: 2, max: 10s } }
                timeout: 60s
            """)
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await Self.drive(clock, transport, waits: [.seconds(5), .seconds(10)])
            let job = try #require(await run["job"])
            #expect(job.state == .succeeded, "\(job.error ?? "")")
            #expect(job.polls.map(\.sent) == [0, 5, 15].map { Duration.seconds($0) })
            #expect(job.polls.map(\.status) == [202, 202, 200])
        }
    }

    /// `retry:` works inside each attempt (a 503 retried after its backoff), `until:` across
    /// them: the report counts both.
    @Test func retriesWorkInsideEachAttemptOfAPoll() async throws {
        let clock = ManualClock()
        let calls = Locked(0)
        let transport = ScriptedHTTPTransport { _, _ in
            let call = calls.withLock {
                $0 += 1
                return $0
            }
            switch call {
            case 1: return respond(503, "busy")
            case 2: return respond(200, #"{"status":"running"}"#)
            default: return respond(200, #"{"status":"done"}"#)
            }
        }
        let workflow = try parse(
            Self.poll.replacingOccurrences(
                of: "timeout: 60s", with: "timeout: 60s\n    retry: { attempts: 2, backoff: 100ms }"
            )
            .replacingOccurrences(of: "captures: { result: $.result, polls: $.polls }", with: ""))
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await waitUntil("backoff of attempt 1's retry") {
                transport.requests.count == 1
                    && clock.pendingSleepers.contains(clock.now.advanced(by: .milliseconds(100)))
            }
            clock.advance(by: .milliseconds(100))
            try await waitUntil("poll asleep after attempt 1") {
                transport.requests.count == 2 && clock.pendingSleepers.contains(clock.now.advanced(by: .seconds(1)))
            }
            clock.advance(by: .seconds(1))
            let job = try #require(await run["job"])
            #expect(job.state == .succeeded, "\(job.error ?? "")")
            #expect(job.pollCount == 2 && job.attempts == 3)
            #expect(job.polls.map(\.status) == [200, 200])
        }
    }

    /// The last check's message is the last attempt's own: `(after N attempts)` would count
    /// the polls before it as its retries.
    @Test func theLastFailedCheckSpeaksOfItsOwnAttempt() async throws {
        let clock = ManualClock()
        let transport = ScriptedHTTPTransport { _, _ in respond(202, #"{"status":"running"}"#) }
        let workflow = try parse(
            "steps:\n  - { id: job, url: \"http://x.test/jobs/a\", expect: 200, until: { interval: 1s, max_attempts: 2 } }\n"
        )
        try await withHangGuard {
            async let run = WorkflowRunner(workflow: workflow, transport: transport).run(clock: clock)
            try await Self.drive(clock, transport, waits: [.seconds(1)])
            let job = try #require(await run["job"])
            #expect(
                job.error
                    == #"until: the checks still failed after 2 attempts (max_attempts: 2); last: expected 200, got 202: {"status":"running"}"#
            )
            #expect(job.attempts == 2 && job.pollCount == 2)
        }
    }
}
