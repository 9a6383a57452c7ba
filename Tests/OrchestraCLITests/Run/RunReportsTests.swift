import Foundation
import HTTPTypes
import OrchestraHTTP
import OrchestraWorkflow
import TestSupport
import Testing

@testable import OrchestraCLI

@Suite("Run reports and the verbose log", .timeLimit(.minutes(1)), .takesTurns)
struct RunReportsTests {
    @Test func xmlEscapesMarkupAndReplacesWhatXMLCannotHold() {
        #expect(RunReports.xml(#"a<b>&"c"'d'"#) == "a&lt;b&gt;&amp;&quot;c&quot;&apos;d&apos;")
        #expect(RunReports.xml("tab\tline\nbell\u{7}nul\u{0}") == "tab\tline\nbell\u{FFFD}nul\u{FFFD}")
        #expect(RunReports.xml("é 日本 🎼") == "é 日本 🎼")
    }

    @Test func aForEachStepIsATestCaseAndSoIsEachElement() {
        var step = StepReport(
            id: "image", state: .failed, method: "GET", url: "http://x.test/{{item}}", error: "1 of 2 failed")
        step.items = [
            StepReport(id: "image[0]", state: .succeeded, method: "GET", url: "http://x.test/0", status: 200),
            StepReport(
                id: "image[1]", state: .failed, method: "GET", url: "http://x.test/1", status: 404,
                error: "expected 2xx, got 404"),
        ]
        let report = WorkflowReport(workflow: "w", steps: [step], duration: .milliseconds(12))
        let xml = RunReports(title: "w", file: "w.yaml", suites: [.init(name: nil, report: report)])
            .junitXML(duration: .milliseconds(12))
        #expect(
            xml.contains(#"<testsuites name="w" tests="3" failures="2" errors="0" skipped="0" time="0.012">"#), "\(xml)"
        )
        #expect(xml.contains(#"<testcase classname="w" name="image[0]" time="0.000"/>"#), "\(xml)")
        #expect(
            xml.contains(#"<failure message="expected 2xx, got 404" type="StepFailure">GET http://x.test/1 → 404"#),
            "\(xml)")
    }

    @Test func verboseShowsTextBodiesUpTo2KBAndOthersBySizeAndType() {
        let log = VerboseLog(redactor: Redactor(secrets: ["pw"]), console: .standardError)
        var exchange = HTTPExchange(
            label: "up", request: HTTPRequest(method: .post, scheme: "https", authority: "x.test", path: "/a?k=pw"),
            body: .data(Data(repeating: UInt8(ascii: "a"), count: 3_000)), duration: .milliseconds(5))
        exchange.request.headerFields[.contentType] = "text/plain"
        exchange.request.headerFields[.cookie] = "sid=1"
        exchange.response = HTTPResponse(status: .ok, headerFields: [.contentType: "image/png"])
        exchange.responseBody = Data([0x89, 0x50, 0x4E, 0x47])
        let text = log.text(of: exchange)
        #expect(
            text.hasPrefix(
                "* up · 5 ms\n> POST https://x.test/a?k=***\n> Content-Type: text/plain\n> Cookie: ***\n>\n> "))
        #expect(text.contains("> " + String(repeating: "a", count: 2_048) + "\n> … (3 KB in all)\n"))
        #expect(text.contains("< 200 OK\n< Content-Type: image/png\n<\n< [4 B, image/png]\n"))
        exchange.response = nil
        exchange.error = "connection refused by x.test:443 (pw)"
        #expect(log.text(of: exchange).contains("! connection refused by x.test:443 (***)"))
    }
}
