import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `orchestra run` against servers that ask for absurd waits or redirect elsewhere: the step
/// fails at once, naming the delay and `max_delay` (never a trap, never a day's sleep), and
/// no credential of the run follows a redirect to another origin.
@Suite("orchestra run: Retry-After limits and credentials on redirects", .timeLimit(.minutes(2)), .takesTurns)
struct RetryAfterAndRedirectCommandTests {
    static func retryFlow(maxDelay: String? = "30s") -> String {
        let maxDelay = maxDelay.map { ", max_delay: \($0)" } ?? ""
        return """
            steps:
              - id: list
                url: "{{vars.url}}"
                retry: { attempts: 3, backoff: 200ms\(maxDelay) }
            """
    }

    @Test(arguments: [
        ("86400", "the server asked to wait 86400 s (Retry-After), more than max_delay 30 s"),
        (
            "9223372036854775807",
            "the server asked to wait 9223372036854775807 s (Retry-After), more than max_delay 30 s"
        ),
        ("Thu, 31 Dec 2099 23:59:59 GMT", " s (Retry-After), more than max_delay 30 s"),
    ])
    func aRetryAfterOverMaxDelayFailsTheStepAtOnce(header: String, message: String) async throws {
        let reply: RawHTTPServer.Handler = { _ in
            .response(status: 503, reason: "Service Unavailable", headers: [("Retry-After", header)], body: "busy")
        }
        try await withRawHTTPServer(reply) { server in
            let file = try WorkflowCommandTests.workflowFile(Self.retryFlow())
            let output = try await OrchestraExecutable.run(
                ["run", file, "--var", "url=\(server.url("/list"))"], limit: .seconds(20))
            #expect(output.status == 1, "\(output)")
            #expect(output.stdout.contains(message), "\(output)")
            #expect(!output.stderr.contains("Fatal error"), "\(output)")
            #expect(server.requests.count == 1, "no retry: \(server.requests.count) requests")
        }
    }

    @Test func maxDelaysDefaultIs30Seconds() async throws {
        let reply: RawHTTPServer.Handler = { _ in
            .response(status: 429, reason: "Too Many Requests", headers: [("Retry-After", "31")])
        }
        try await withRawHTTPServer(reply) { server in
            let file = try WorkflowCommandTests.workflowFile(Self.retryFlow(maxDelay: nil))
            let output = try await OrchestraExecutable.run(
                ["run", file, "--var", "url=\(server.url("/list"))"], limit: .seconds(20))
            #expect(output.status == 1, "\(output)")
            #expect(
                output.stdout.contains("the server asked to wait 31 s (Retry-After), more than max_delay 30 s"),
                "\(output)")
        }
    }

    /// `-v` says when a run waits because the server asked (`Retry-After: 0`: no real wait).
    @Test func verboseSaysWhenARunWaitsForARetryAfter() async throws {
        let calls = RequestCounter()
        let reply: RawHTTPServer.Handler = { _ in
            calls.next() == 1
                ? .response(status: 503, reason: "Service Unavailable", headers: [("Retry-After", "0")])
                : .response(status: 200, reason: "OK", body: "done")
        }
        try await withRawHTTPServer(reply) { server in
            let file = try WorkflowCommandTests.workflowFile(Self.retryFlow())
            let output = try await OrchestraExecutable.run([
                "run", file, "--var", "url=\(server.url("/list"))", "-v", "--no-color",
            ])
            #expect(output.status == 0, "\(output)")
            #expect(
                output.stderr.contains(
                    "* list · 503 on attempt 1: waiting 0 ms (the server's Retry-After), then attempt 2"),
                "\(output)")
        }
    }

    /// The auth block's own header (`X-Api-Token`) and a header holding a secret stay with the
    /// origin they were meant for: the demo server logs in and redirects to a raw server on
    /// another port, which records what arrives.
    @Test func credentialsOfTheRunDoNotFollowARedirectToAnotherOrigin() async throws {
        let landing: RawHTTPServer.Handler = { _ in .response(status: 200, reason: "OK", body: "{}") }
        try await withRawHTTPServer(landing) { other in
            try await withDemoServer { server in
                let base = server.baseURL.absoluteString
                let file = try WorkflowCommandTests.workflowFile(
                    """
                    vars: { base: "\(base)", key: k3y-s3cret }
                    secrets: [key]
                    auth:
                      login: { url: "{{vars.base}}/login", token: $.access_token }
                      header: X-Api-Token
                      scheme: ""
                    steps:
                      - id: same
                        url: "{{vars.base}}/anything"
                        headers: { X-Key: "{{vars.key}}" }
                      - id: away
                        url: "{{vars.base}}/redirect-to?url={{vars.other}}"
                        headers: { X-Key: "{{vars.key}}", Accept: text/plain }
                        basic_auth: { user: ada, password: "{{vars.key}}" }
                    """)
                let output = try await OrchestraExecutable.run([
                    "run", file, "--var", "other=\(other.url("/landing"))", "--output", "json",
                ])
                #expect(output.status == 0, "\(output)")
                let landed = try #require(other.requests.first, "the redirect reached the other server: \(output)")
                #expect(landed.target == "/landing")
                #expect(landed.header("X-Api-Token") == nil, "\(landed.headers)")
                #expect(landed.header("X-Key") == nil, "\(landed.headers)")
                #expect(landed.header("Authorization") == nil, "\(landed.headers)")
                #expect(landed.header("Accept") == "text/plain", "other headers follow: \(landed.headers)")
            }
        }
    }
}

extension RetryAfterAndRedirectCommandTests {
    /// The other origin never saw the token: its 401 is a status like any other, not a reason
    /// to refresh the token or to say the server refused it.
    @Test func aRefusalFromAnotherOriginIsNotTheTokensRefusal() async throws {
        let refusing: RawHTTPServer.Handler = { _ in .response(status: 401, reason: "Unauthorized", body: "who?") }
        try await withRawHTTPServer(refusing) { other in
            try await withDemoServer { server in
                let file = try WorkflowCommandTests.workflowFile(
                    """
                    vars: { base: "\(server.baseURL.absoluteString)" }
                    auth:
                      login: { url: "{{vars.base}}/login", token: $.access_token }
                      header: X-Api-Token
                      scheme: ""
                    steps:
                      - id: away
                        url: "{{vars.base}}/redirect-to?url={{vars.other}}"
                    """)
                let output = try await OrchestraExecutable.run([
                    "run", file, "--var", "other=\(other.url("/landing"))", "--no-color",
                ])
                #expect(output.status == 1, "\(output)")
                #expect(output.stdout.contains("expected 2xx, got 401"), "\(output)")
                #expect(!output.stdout.contains("refused the token"), "\(output)")
                #expect(output.stdout.contains("auth: 1 login, 0 refreshes"), "\(output)")
                #expect(other.requests.count == 1, "not sent again after a refresh")
            }
        }
    }
}

/// Counts the requests a ``RawHTTPServer`` handler sees, from its threads.
private final class RequestCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    /// The number of this request (1-based).
    func next() -> Int {
        lock.withLock {
            count += 1
            return count
        }
    }
}
