import Foundation
import Orchestra
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// What a server (or a cookie file) can make the jar hold and send: RFC 6265 §6.1's limits
/// as browsers and curl apply them, and no control characters in a stored cookie.
@Suite("Cookie jar limits", .timeLimit(.minutes(3)), .ownThread, .takesTurns)
struct CookieJarLimitsTests {
    let now = Date(timeIntervalSince1970: 1_700_000_000)

    func jar() -> CookieJar {
        let now = now
        return CookieJar(now: { now })
    }

    func store(_ jar: CookieJar, _ fields: [String], host: String = "h.test", path: String = "/") {
        jar.store(setCookie: fields, scheme: "http", host: host, path: path)
    }

    @Test(
        "a cookie larger than 4,096 bytes (its Set-Cookie text, or name, value, domain and path) is ignored",
        arguments: [
            // Stored: name, value, "h.test" and "/": 4,096 bytes, then 4,097.
            ("n=" + String(repeating: "v", count: 4_088), "/", true),
            ("n=" + String(repeating: "v", count: 4_089), "/", false),
            // Small when stored, but a Set-Cookie text of 4,096 bytes, then 4,097.
            ("n=v; X=" + String(repeating: "x", count: 4_089), "/", true),
            ("n=v; X=" + String(repeating: "x", count: 4_090), "/", false),
            // 4,062 bytes of text, but the default path from the request makes it 4,097 stored.
            ("n=" + String(repeating: "v", count: 4_060), "/" + String(repeating: "p", count: 29) + "/x", false),
            ("n=" + String(repeating: "v", count: 4_060), "/" + String(repeating: "p", count: 28) + "/x", true),
        ])
    func perCookieSize(field: String, requestPath: String, kept: Bool) {
        let jar = jar()
        store(jar, [field], path: requestPath)
        #expect(jar.cookies.count == (kept ? 1 : 0), "\(field.utf8.count) bytes, path \(requestPath.count)")
    }

    @Test(
        "a cookie with a control character in its name, value or path is refused when set (it would forge jar fields)",
        arguments: ["\t", "\r", "\n", "\u{0}", "\u{1}", "\u{1B}", "\u{7F}"])
    func controlCharacters(control: String) throws {
        let jar = jar()
        store(
            jar,
            [
                "n\(control)x=1", "v=a\(control)b", "p=1; Path=/a\(control)b", "d=1; Domain=h\(control).test",
                "ok=1; Path=/",
            ])
        #expect(jar.cookies.map(\.name) == ["ok"])
        jar.add(.init(name: "n", value: "a\(control)b", domain: "h.test"))
        jar.add(.init(name: "n", value: "1", domain: "h\(control).test"))
        #expect(jar.cookies.map(\.name) == ["ok"], "add refuses them too")
        let loaded = self.jar()
        try loaded.load(netscape: jar.netscapeText())
        #expect(loaded.cookies == jar.cookies, "the file reads back as written")
        #expect(jar.netscapeText().split(separator: "\n").last == "h.test\tFALSE\t/\tFALSE\t0\tok\t1")
    }

    @Test("a control character in a cookie file's line refuses the file, naming the line")
    func controlCharacterInAFile() {
        let error = formatError(
            "h.test\tFALSE\t/\tFALSE\t0\ta\t1\nh.test\tFALSE\t/\tFALSE\t0\tb\tx\u{1B}y\n")
        #expect(error?.description == "line 2: the cookie's value holds a control character")
    }

    @Test("a cookie file with CRLF line ends reads as with LF")
    func crlfLineEnds() throws {
        let jar = jar()
        store(jar, ["a=1; Path=/", "b=2; Path=/; HttpOnly"])
        let loaded = self.jar()
        try loaded.load(netscape: jar.netscapeText().replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(loaded.cookies.count == 2)
        #expect(loaded.cookies == jar.cookies)
    }

    @Test("a domain keeps 50 cookies: a new one evicts its least recently set or sent, other domains untouched")
    func perDomainEviction() {
        let jar = jar()
        store(jar, ["other=1"], host: "other.test")
        for batch in stride(from: 0, to: 50, by: 10) {
            store(jar, (batch..<batch + 10).map { "c\($0)=1; Path=/\($0 % 2 == 0 ? "even" : "odd")" })
        }
        #expect(jar.cookies.count == 51)
        store(jar, ["c0=2; Path=/even"])  // c0 set again: now the most recent.
        _ = jar.header(scheme: "http", host: "h.test", path: "/odd")  // every odd one sent: recent too.
        store(jar, ["new1=1", "new2=1"])
        let names = Set(jar.cookies.map(\.name))
        #expect(names.count == 51)
        #expect(!names.contains("c2") && !names.contains("c4"), "the two least recently used went")
        #expect(names.isSuperset(of: ["c0", "c1", "c6", "new1", "new2", "other"]))
    }

    @Test("the jar keeps 3,000 cookies, 61 domains of 50: the least recently used go first")
    func jarSize() {
        let jar = jar()
        for domain in 0..<61 {
            let fields = (0..<50).map { "c\($0)=1" }
            store(jar, fields, host: "d\(domain).test")
        }
        let cookies = jar.cookies
        #expect(cookies.count == 3_000)
        #expect(!cookies.contains { $0.domain == "d0.test" }, "the first domain's 50 were the oldest")
        #expect(cookies.filter { $0.domain == "d60.test" }.count == 50)
    }

    @Test("a response sets at most 50 cookies, in separate fields or joined in one")
    func perResponse() {
        for fields in [(0..<4_000).map { "c\($0)=1" }, [(0..<4_000).map { "c\($0)=1" }.joined(separator: ", ")]] {
            let jar = jar()
            store(jar, fields, host: "a.h.test")
            #expect(jar.cookies.map(\.name) == (0..<50).map { "c\($0)" })
        }
    }

    @Test(
        "the Cookie header holds at most 8,190 bytes: a cookie that does not fit is left out, smaller later ones sent")
    func headerSize() throws {
        let jar = jar()
        let big = String(repeating: "x", count: 3_000)
        store(jar, (0..<5).map { "big\($0)=\(big); Path=/" } + ["small=1; Path=/"])
        let header = try #require(jar.header(scheme: "http", host: "h.test", path: "/"))
        #expect(header.utf8.count <= CookieJar.maximumHeaderBytes)
        #expect(header == "big0=\(big); big1=\(big); small=1")
    }

    @Test("4,000 cookies of 3 KB over 80 responses (the flood of the issue): 50 kept, an 8 KB header")
    func flood() throws {
        let jar = jar()
        let value = String(repeating: "v", count: 3_000)
        for response in 0..<80 {
            store(jar, (0..<50).map { "c\(response)_\($0)=\(value)" })
        }
        #expect(jar.cookies.count == 50)
        #expect(jar.netscapeText().utf8.count < 160_000)
        let header = try #require(jar.header(scheme: "http", host: "h.test", path: "/"))
        #expect(header.utf8.count <= 8_190)
    }

    @Test("a huge Max-Age is cut to 400 days, and a file's huge expiry is written back without a trap")
    func hugeLifetimes() throws {
        let jar = jar()
        store(jar, ["a=1; Max-Age=9223372036854775807", "b=1; Expires=Fri, 31 Dec 9999 23:59:59 GMT"])
        #expect(jar.cookies.map(\.expires) == Array(repeating: now.addingTimeInterval(400 * 86_400), count: 2))
        let loaded = self.jar()
        try loaded.load(netscape: "h.test\tFALSE\t/\tFALSE\t9223372036854775807\tc\t1\n")
        #expect(loaded.netscapeText().contains("\t253402300799\tc\t1"))
    }

    @Test("a cookie file holds at most 3,000 cookies; the next line is refused, naming it")
    func fileCount() throws {
        let line = { (index: Int) in "d\(index / 50).test\tFALSE\t/\tFALSE\t0\tc\(index)\t1\n" }
        let fits = "# Netscape HTTP Cookie File\n\n" + (0..<3_000).map(line).joined()
        let jar = jar()
        try jar.load(netscape: fits)
        #expect(jar.cookies.count == 3_000)
        #expect(
            formatError(fits + line(3_000))?.description == "line 3003: more than 3000 cookies, the most a jar keeps")
        let big = formatError("h.test\tFALSE\t/\tFALSE\t0\tc\t\(String(repeating: "v", count: 4_096))\n")
        #expect(big?.description == "line 1: the cookie is 4104 bytes, more than 4096 (name, value, domain and path)")
    }

    /// The error loading `text` into a new jar throws, if it throws one.
    func formatError(_ text: String) -> CookieJar.FormatError? {
        do {
            try jar().load(netscape: text)
            return nil
        } catch {
            return error
        }
    }
}
