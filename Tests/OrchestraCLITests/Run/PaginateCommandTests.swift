import Foundation
import OrchestraDemoServer
import OrchestraTestKit
import TestSupport
import Testing

/// `paginate:` as the command runs it against the demo server's lists (`/pages/{total}`), in
/// each of the four styles an API gives its next page, on both transports. The last page is
/// held until the first item's own request has come (`hold_last=true`), so a run that waited
/// for every page before sending an item fails (409) instead of passing.
@Suite("orchestra: paginate", .serialized, .timeLimit(.minutes(5)), .takesTurns)
struct PaginateCommandTests {
    static let styles: [(style: String, paginate: String, query: String)] = [
        ("next", "{ next: $.links.next, items: $.data }", ""),
        ("link", "{ next: { header: Link }, items: $.data }", ""),
        ("cursor", "{ cursor: $.next_cursor, items: $.data }", "&cursor={{page.cursor}}"),
        ("number", "{ items: $.data }", "&page={{page.number}}"),
    ]

    @Test func everyStyleStreamsEveryItemOnceToTheForEach() async throws {
        try await withDemoServer { server in
            for (style, paginate, query) in Self.styles {
                let file = try WorkflowCommandTests.workflowFile(
                    """
                    limit: 4
                    steps:
                      - id: list
                        url: "{{vars.base}}/pages/23?per_page=5&style=\(style)&hold_last=true\(query)"
                        paginate: \(paginate)
                      - id: each
                        for_each: "{{list.items}}"
                        url: "{{vars.base}}/page-items/{{item.id}}"
                    """)
                for transport in ["asynchttpclient", "urlsession"] {
                    let output = try await OrchestraExecutable.run([
                        "run", file, "--var", "base=\(server.baseURL.absoluteString)", "--transport", transport,
                        "--no-color", "--output", "json",
                    ])
                    #expect(output.status == 0, "\(style), \(transport): \(output)")
                    let report = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
                    let steps = report?["steps"] as? [[String: Any]] ?? []
                    let list = steps.first { $0["id"] as? String == "list" }
                    let item = steps.first { $0["id"] as? String == "each" }
                    let pages = (list?["items"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
                    // 23 items, 5 a page: 5 pages, and counted pages end at the empty sixth.
                    let expected = (1...(style == "number" ? 6 : 5)).map { "list[page \($0)]" }
                    #expect(pages == expected, "\(style), \(transport)")
                    let urls = (item?["items"] as? [[String: Any]])?.compactMap { $0["url"] as? String } ?? []
                    #expect(urls.count == 23, "\(style), \(transport)")
                    #expect(
                        Set(urls) == Set((0..<23).map { "\(server.baseURL.absoluteString)/page-items/\($0)" }),
                        "\(style), \(transport)")
                }
            }
        }
    }

    @Test func validateAndGraphShowThePages() async throws {
        let file = try WorkflowCommandTests.workflowFile(
            """
            steps:
              - id: list
                url: "http://127.0.0.1:1/pages/10?cursor={{page.cursor}}"
                paginate: { cursor: $.next_cursor, items: $.data, max_pages: 50 }
              - { id: each, for_each: "{{list.items}}", url: "http://127.0.0.1:1/page-items/{{item.id}}" }
            """)
        let graph = try await OrchestraExecutable.run(["graph", file, "--format", "mermaid"])
        #expect(graph.status == 0, "\(graph)")
        #expect(graph.stdout.contains("pages by cursor $.next_cursor → items $.data (≤ 50)"), "\(graph)")

        let broken = try WorkflowCommandTests.workflowFile(
            """
            steps:
              - id: list
                url: "http://127.0.0.1:1/pages/10"
                paginate: { cursor: $.next_cursor, items: $.data, max_pages: 0 }
            """)
        let validated = try await OrchestraExecutable.run(["validate", broken])
        #expect(validated.status == 2, "\(validated)")
        #expect(validated.stderr.contains(":4:") && validated.stderr.contains("paginate.max_pages"), "\(validated)")
        #expect(validated.stderr.contains("must be a number of pages ≥ 1, got '0'"), "\(validated)")
    }
}
