import Foundation
import HTTPTypes
@_spi(Simulation) import Orchestra
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// URLs are made ASCII before any transport: what a component does not allow is encoded,
/// escapes already written are kept (issue 13: `São%20Paulo` was sent as `S%C3%A3o%2520Paulo`).
@Suite("URL escaping", .timeLimit(.minutes(1)), .takesTurns)
struct URLEscapingTests {
    @Test(arguments: [
        ("http://x.test/a?city=São%20Paulo", "http://x.test/a?city=S%C3%A3o%20Paulo"),
        ("http://x.test/café/menu", "http://x.test/caf%C3%A9/menu"),
        ("http://x.test/a%2Fb/c%2f?q=%41", "http://x.test/a%2Fb/c%2f?q=%41"),
        ("http://x.test/100%/x?q=50%&r=%zz&s=%2", "http://x.test/100%25/x?q=50%25&r=%25zz&s=%252"),
        ("http://x.test/s?q=日本&k=ü", "http://x.test/s?q=%E6%97%A5%E6%9C%AC&k=%C3%BC"),
        ("http://x.test/a[b]/{c}|d\"e<f>^`\\", "http://x.test/a%5Bb%5D/%7Bc%7D%7Cd%22e%3Cf%3E%5E%60%5C"),
        ("http://x.test/a#frag#ü", "http://x.test/a#frag%23%C3%BC"),
        ("http://us er:pä@x.test:8080/p", "http://us%20er:p%C3%A4@x.test:8080/p"),
        ("http://[::1]:8080/ü", "http://[::1]:8080/%C3%BC"),
        ("http://bücher.example/ü", "http://xn--bcher-kva.example/%C3%BC"),
        ("https://例え.テスト:8443/", "https://xn--r8jz45g.xn--zckzah:8443/"),
    ])
    func whatAComponentDoesNotAllowIsEncodedAndEscapesAreKept(_ written: String, _ sent: String) {
        #expect(URLCheck.escaped(written) == sent)
        #expect(URLCheck.escaped(sent) == sent, "escaping twice changes nothing")
    }

    @Test(arguments: [
        "http://x.test/a/b;c=d?e=f&g=h/i?j#k",
        "https://user:pw@x.test:443/~user/a-b_c.d!$&'()*+,;=:@?x=%20%2F",
        "http://127.0.0.1:8080/images/0?latency_ms=1",
        "http://x.test",
    ])
    func aURLThatIsAlreadyValidIsLeftByteForByte(_ url: String) {
        #expect(URLCheck.escaped(url) == url)
    }

    @Test(arguments: [
        ("http://x.test", "http", "x.test", "/"),
        ("HTTPS://x.test:8443?q=1", "https", "x.test:8443", "/?q=1"),
        ("http://user:pw@x.test:8080/a/b?c=d#frag", "http", "x.test:8080", "/a/b?c=d"),
        ("http://[::1]:8080/p?x=a://b@c", "http", "[::1]:8080", "/p?x=a://b@c"),
        ("http://u%40v@x.test/%C3%BC/", "http", "x.test", "/%C3%BC/"),
    ])
    func aSentURLIsSplitIntoSchemeAuthorityAndPath(_ url: String, _ scheme: String, _ authority: String, _ path: String)
    {
        let parts = RenderedRequest.split(url)
        #expect(parts.scheme == scheme)
        #expect(parts.authority == authority)
        #expect(parts.path == path)
    }

    @Test func aHostWithNoASCIIFormIsRefusedSayingSo() {
        #expect(
            URLCheck.problem(with: "http://ü..example/")
                == "has a host with non-ASCII letters that is not a valid internationalized domain name")
        #expect(URLCheck.problem(with: "http://x.test/São%20Paulo") == nil)
        #expect(URLCheck.problem(with: "http://x.test/a b") == "contains a space or a line break")
    }

    @Test func theTransportGetsAnASCIIURLAndCapturesStayEncodedByTheTemplate() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            request.path == "/first" ? respond(200, #"{"path":"/é%2F","v":"a b/é"}"#) : respond()
        }
        let workflow = try parse(
            """
            steps:
              - { id: first, url: "http://x.test/first", captures: { path: $.path, v: $.v } }
              - { id: city, url: "http://x.test/cities/café?city=São%20Paulo&raw={{first.path | raw}}&v={{first.v}}" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report)")
        let sent = "/cities/caf%C3%A9?city=S%C3%A3o%20Paulo&raw=/%C3%A9%2F&v=a%20b%2F%C3%A9"
        #expect(transport.requests.last?.path == sent)
        #expect(report["city"]?.url == "http://x.test" + sent)
    }

    @Test func theDemoServerReceivesTheEscapesAsWritten() async throws {
        try await withDemoServer { server in
            let workflow = try parse(
                """
                vars: { base: "\(server.baseURL.absoluteString)" }
                steps:
                  - { id: city, url: "{{vars.base}}/echo/São%20Paulo%2Fcafé?city=São%20Paulo" }
                """)
            let report = await WorkflowRunner(workflow: workflow).run()
            #expect(report.allSucceeded, "\(report)")
            #expect(
                report["city"]?.url.hasSuffix("/echo/S%C3%A3o%20Paulo%2Fcaf%C3%A9?city=S%C3%A3o%20Paulo") == true,
                "\(report["city"]?.url ?? "")")
            #expect(server.arrivals(of: "/echo/S%C3%A3o%20Paulo%2Fcaf%C3%A9") == 1)
        }
    }

    /// The fast path of the URL check accepts only what the full check (escaping, then
    /// `URLComponents`) accepts as it is; random URLs from the characters that matter.
    @Test func theFastURLCheckAgreesWithTheFullOne() {
        var generator = SplitMix64(seed: 14)
        let pieces = [
            "a", "Z", "0", "9", ".", "-", ":", "/", "?", "#", "%", "%20", "@", "[", "]", " ", "ü", "_", "~", "!", "=",
            "&", "{", "}", "|", "^", "65535", "65536", "0", "x.test",
        ]
        let starts = [
            "http://", "https://", "HTTP://", "ftp://", "http:/", "http://x.test:", "https://x.test:8080", "",
        ]
        var plain = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...8, using: &generator)
            let text =
                starts.randomElement(using: &generator)!
                + (0..<length).map { _ in pieces.randomElement(using: &generator)! }.joined()
            guard URLCheck.isPlainlyValid(text) else { continue }
            plain += 1
            #expect(URLCheck.fullCheck(text) == nil, "'\(text)' passed the fast check only")
            #expect(URLCheck.escaped(text) == text, "'\(text)' passed the fast check but is not sent as written")
        }
        #expect(plain > 500, "the sample reaches the fast path")
    }
}
