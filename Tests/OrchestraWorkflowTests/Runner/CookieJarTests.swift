import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("Cookie jar", .timeLimit(.minutes(1)), .takesTurns)
struct CookieJarTests {
    /// A jar whose time is `now` (seconds since 1970), moved by the test.
    final class Time: Sendable {
        let seconds = Locked<TimeInterval>(1_700_000_000)
        var date: Date { Date(timeIntervalSince1970: seconds.withLock { $0 }) }
    }

    func jar(_ time: Time = Time()) -> CookieJar {
        CookieJar(now: { time.date })
    }

    @Test func aCookieIsSentBackToItsHostAndPathOnly() {
        let jar = self.jar()
        jar.store(
            setCookie: ["sid=1; Path=/app", "lang=en"], scheme: "http", host: "api.test:8080", path: "/app/login?x=1")
        #expect(jar.header(scheme: "http", host: "api.test:8080", path: "/app/me") == "sid=1; lang=en")
        #expect(jar.header(scheme: "http", host: "api.test", path: "/app") == "sid=1; lang=en", "any port")
        #expect(
            jar.header(scheme: "http", host: "api.test", path: "/application") == nil,
            "/app is not a segment of /application")
        #expect(jar.header(scheme: "http", host: "api.test", path: "/") == nil, "lang's default path is /app")
        #expect(jar.header(scheme: "http", host: "other.test", path: "/app") == nil)
        #expect(jar.header(scheme: "http", host: "sub.api.test", path: "/app") == nil, "host-only without Domain")
    }

    @Test func domainSecureAndReplacementFollowRFC6265() {
        let jar = self.jar()
        jar.store(
            setCookie: ["a=1; Domain=.example.com; Path=/", "b=2; Secure; Path=/", "c=3; Domain=evil.com"],
            scheme: "https", host: "www.example.com", path: "/")
        #expect(jar.cookies.map(\.name) == ["a", "b"], "a Domain that does not cover the host is ignored")
        #expect(jar.header(scheme: "http", host: "api.example.com", path: "/x") == "a=1")
        #expect(jar.header(scheme: "https", host: "www.example.com", path: "/x") == "a=1; b=2")
        jar.store(setCookie: ["a=9; Domain=example.com; Path=/"], scheme: "https", host: "example.com", path: "/")
        #expect(jar.value(named: "a") == "9")
        #expect(jar.cookies.count == 2, "same name, domain and path: replaced")
        jar.store(setCookie: ["d=4; Domain=0.0.1"], scheme: "http", host: "127.0.0.1", path: "/")
        #expect(jar.value(named: "d") == nil, "an IP address has no parent domain")
    }

    @Test func expiryByMaxAgeOrDateAndDeletion() {
        let time = Time()
        let jar = self.jar(time)
        jar.store(
            setCookie: [
                "short=1; Max-Age=60", "dated=2; Expires=Wed, 21 Oct 2065 07:28:00 GMT",
                "old=3; Expires=Thu, 01-Jan-70 00:00:01 GMT",
            ],
            scheme: "http", host: "h.test", path: "/")
        #expect(jar.cookies.map(\.name) == ["short", "dated"])
        time.seconds.withLock { $0 += 61 }
        #expect(jar.header(scheme: "http", host: "h.test", path: "/") == "dated=2")
        jar.store(setCookie: ["dated=; Max-Age=0"], scheme: "http", host: "h.test", path: "/")
        #expect(jar.cookies.isEmpty)
    }

    @Test(arguments: [
        ("Wed, 21 Oct 2015 07:28:00 GMT", 1_445_412_480.0),
        ("Wednesday, 21-Oct-15 07:28:00 GMT", 1_445_412_480),
        ("Wed Oct 21 07:28:00 2015", 1_445_412_480),
        ("21 oct 2015 07:28:00", 1_445_412_480),
    ])
    func cookieDatesInEveryCommonSpelling(text: String, seconds: TimeInterval) {
        #expect(CookieJar.parseDate(text)?.timeIntervalSince1970 == seconds)
    }

    @Test func cookiesJoinedInOneFieldAreSplitButNotAtADatesComma() {
        let jar = self.jar()
        jar.store(
            setCookie: ["a=1; Path=/, b=2; Expires=Mon, 21 Oct 2024 07:28:00 GMT; Path=/,c=3"], scheme: "http",
            host: "h.test", path: "/")
        #expect(jar.cookies.map(\.name) == ["a", "b", "c"])
        #expect(jar.cookies[1].expires == CookieJar.parseDate("Mon, 21 Oct 2024 07:28:00 GMT"))
        #expect(jar.header(scheme: "http", host: "h.test", path: "/") == "a=1; b=2; c=3")
    }

    @Test func unreadableDatesAndPairsAreIgnored() {
        #expect(CookieJar.parseDate("tomorrow") == nil)
        #expect(CookieJar.parseDate("Wed, 32 Oct 2015 07:28:00 GMT") == nil)
        let jar = self.jar()
        jar.store(setCookie: ["novalue", "=x", "ok=1; Expires=someday"], scheme: "http", host: "h.test", path: "/")
        #expect(jar.cookies.map(\.name) == ["ok"])
        #expect(jar.cookies.first?.expires == nil, "an unreadable Expires leaves a session cookie")
    }

    @Test func theNetscapeFileRoundTripsAndABadLineIsNamed() throws {
        let jar = self.jar()
        jar.store(
            setCookie: ["sid=abc; Path=/; HttpOnly", "wide=1; Domain=example.com; Secure; Max-Age=3600"],
            scheme: "https", host: "www.example.com", path: "/")
        let text = jar.netscapeText()
        #expect(text.contains("#HttpOnly_www.example.com\tFALSE\t/\tFALSE\t0\tsid\tabc"))
        #expect(text.contains(".example.com\tTRUE\t/\tTRUE\t1700003600\twide\t1"))
        let loaded = self.jar()
        try loaded.load(netscape: text)
        #expect(loaded.cookies == jar.cookies)
        #expect(throws: CookieJar.FormatError.self) { try loaded.load(netscape: "# c\n\nh.test\tFALSE\t/\n") }
        do {
            try loaded.load(netscape: "h.test\tFALSE\t/\tMAYBE\t0\tn\tv\n")
        } catch {
            #expect(error.line == 1 && error.message.contains("TRUE or FALSE"))
        }
    }

    // MARK: - In a run

    /// A server that sets `sid` and `t` at /login (on a 302 to /home) and echoes the Cookie
    /// fields, separated by `|`.
    static let server = ScriptedHTTPTransport { request, _ in
        switch request.path {
        case "/login":
            var headers: HTTPFields = [.location: "/home"]
            headers.append(HTTPField(name: .setCookie, value: "sid=s1; Path=/; HttpOnly"))
            headers.append(HTTPField(name: .setCookie, value: "t=2; Path=/"))
            return respond(302, "", headers: headers)
        default:
            let fields = request.headerFields[values: .cookie].joined(separator: "|")
            return respond(200, #"{"cookie":"\#(fields)"}"#)
        }
    }

    func run(_ text: String, jar: CookieJar? = nil) async throws -> WorkflowReport {
        let workflow = try Workflow.parse(text, file: "flow.yaml", environment: [:])
        return try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: Self.server, cookieJar: jar).run(clock: ManualClock())
        }
    }

    @Test func aCookieSetByARedirectIsSentOnTheHopAndByLaterStepsUnlessTurnedOff() async throws {
        let jar = CookieJar()
        let report = try await run(
            """
            steps:
              - { id: login, url: "http://x.test/login", captures: { cookie: $.cookie } }
              - { id: me, url: "http://x.test/me", needs: login, captures: { cookie: $.cookie } }
              - { id: bare, url: "http://x.test/me", needs: login, cookies: false, captures: { cookie: $.cookie } }
              - { id: echo, url: "http://x.test/echo?sid={{cookies.sid}}", needs: login, headers: { Cookie: "mine=1" }, captures: { cookie: $.cookie } }
            """, jar: jar)
        #expect(report.allSucceeded, "\(report.steps.compactMap(\.error))")
        func cookie(_ id: String) -> JSONValue? { report[id]?.captures.first?.value }
        #expect(cookie("login") == .string("sid=s1; t=2"), "the redirect's hop to /home, in one Cookie field")
        #expect(cookie("me") == .string("sid=s1; t=2"))
        #expect(cookie("bare") == .string(""))
        #expect(cookie("echo") == .string("mine=1"), "a Cookie header given by the step is sent as it is")
        #expect(report["echo"]?.url == "http://x.test/echo?sid=s1")
        #expect(jar.value(named: "sid") == "s1", "the jar given to the runner is the one used")
    }

    @Test func cookiesFalseAtTheTopTurnsTheJarOffAndACookieTemplateFailsTheStep() async throws {
        let report = try await run(
            """
            cookies: false
            steps:
              - { id: login, url: "http://x.test/login", captures: { cookie: $.cookie } }
              - { id: me, url: "http://x.test/me?sid={{cookies.sid}}", needs: login }
            """)
        #expect(report["login"]?.captures.first?.value == .string(""))
        #expect(report["me"]?.state == .failed)
        #expect(report["me"]?.error?.contains("cookies are off") == true, "\(report["me"]?.error ?? "")")
    }

    @Test func aMissingCookieNamesWhatTheJarHolds() async throws {
        let report = try await run(
            """
            steps:
              - { id: login, url: "http://x.test/login" }
              - { id: me, url: "http://x.test/me?t={{cookies.token}}", needs: login }
            """)
        #expect(report["me"]?.error == "{{cookies.token}}: no cookie 'token' in the run's jar (it holds sid, t)")
    }

    @Test func cookieTemplatesAreRefusedWhereNoStepRuns() {
        let messages = errors(
            """
            basic_auth: { user: "{{cookies.u}}", password: x }
            steps:
              - { id: cookies, url: "http://x.test/" }
              - { id: b, url: "http://x.test/", cookies: maybe }
            """
        ).map(\.description)
        #expect(
            messages.contains { $0.hasPrefix("flow.yaml:1:") && $0.contains("the cookie jar belongs to the steps") })
        #expect(messages.contains { $0.hasPrefix("flow.yaml:3:") && $0.contains("'cookies' is reserved") })
        #expect(messages.contains { $0.hasPrefix("flow.yaml:4:") && $0.contains("must be true or false") })
    }
}
