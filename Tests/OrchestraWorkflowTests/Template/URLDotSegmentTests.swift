import Foundation
import HTTPTypes
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

/// A value made only of dots cannot make a dot segment of a URL's path (`/users/../admin`).
@Suite("Dot segments from values", .timeLimit(.minutes(1)), .takesTurns)
struct URLDotSegmentTests {
    static let values = TemplateValues(captures: [
        "c": [
            "up": .string(".."), "here": .string("."), "three": .string("..."), "dotted": .string("a..b"),
            "trailing": .string("v1."),
        ]
    ])

    @Test(arguments: [
        ("http://x.test/users/{{c.up}}/delete", "http://x.test/users/%2E%2E/delete"),
        ("http://x.test/users/{{c.here}}/delete", "http://x.test/users/%2E/delete"),
        ("http://x.test/users/{{c.here}}{{c.here}}/delete", "http://x.test/users/%2E%2E/delete"),
        ("http://x.test/users/{{c.three}}", "http://x.test/users/%2E%2E%2E"),
        ("http://x.test/users/{{c.up | urlencode}}", "http://x.test/users/%2E%2E"),
        ("http://x.test/search?q={{c.up}}", "http://x.test/search?q=%2E%2E"),
        // Values with other characters are not a dot segment: as they are.
        ("http://x.test/users/{{c.dotted}}/{{c.trailing}}", "http://x.test/users/a..b/v1."),
        // `| raw` inserts a value as is, by design.
        ("http://x.test/users/{{c.up | raw}}/delete", "http://x.test/users/../delete"),
    ])
    func aValueOfDotsIsEncoded(template: String, url: String) throws {
        #expect(try Template(parsing: template).render(for: .url, with: Self.values) == url)
    }

    @Test func theRequestSentKeepsTheEncodedDots() async throws {
        let workflow = try parse(
            """
            steps:
              - { id: c, url: "http://x.test/c", captures: { up: $.up } }
              - { id: d, method: DELETE, url: "http://x.test/users/{{c.up}}/delete" }
            """)
        let transport = ScriptedHTTPTransport { _, _ in respond(200, #"{"up":".."}"#) }
        let report = try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded)
        #expect(transport.requests.last?.path == "/users/%2E%2E/delete")
        #expect(report["d"]?.url == "http://x.test/users/%2E%2E/delete")
    }
}
