import Foundation
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("Data files (--data)", .timeLimit(.minutes(1)), .takesTurns)
struct DataFileTests {
    func messages(_ body: () throws(WorkflowErrors) -> DataRows) -> [String] {
        do {
            _ = try body()
            return []
        } catch {
            return error.errors.map(\.description)
        }
    }

    @Test func csvReadsQuotedFieldsCommasQuotesLineBreaksCRLFAndABOM() throws {
        let text = "\u{FEFF}name,note, id \r\n\"Lovelace, Ada\",\"said \"\"hi\"\"\",1\r\n\nplain,\"two\nlines\",2\n,,3"
        let rows = try Workflow.csvRows(text, file: "rows.csv")
        #expect(rows.columns == ["name", "note", "id"], "names are trimmed")
        #expect(
            rows.rows == [
                ["name": "Lovelace, Ada", "note": "said \"hi\"", "id": "1"],
                ["name": "plain", "note": "two\nlines", "id": "2"],
                ["name": "", "note": "", "id": "3"],
            ])
    }

    @Test func csvProblemsNameTheLine() {
        let cases: [(text: String, line: Int, message: String)] = [
            ("", 1, "no header row"),
            ("a,b\n1,2\n3\n", 3, "1 field, but the header has 2 columns"),
            ("a,a\n", 1, "the column 'a' is named twice"),
            ("a,,c\n", 1, "column 2 of the header has no name"),
            ("a,b\n1,\"open\n2,3\n", 2, "a quoted field is not closed"),
        ]
        for (text, line, message) in cases {
            let found = messages { () throws(WorkflowErrors) in try Workflow.csvRows(text, file: "rows.csv") }
            #expect(
                found.contains { $0.hasPrefix("rows.csv:\(line):") && $0.contains(message) },
                "\(text.debugDescription): \(found)")
        }
    }

    @Test func jsonRowsAreObjectsWhoseValuesBecomeText() throws {
        let rows = try Workflow.jsonRows(
            #"[{"user":"ada","n":1.50,"ok":true,"tags":["a"]},{"user":"grace","extra":null}]"#, file: "rows.json")
        #expect(rows.columns == ["user", "n", "ok", "tags", "extra"])
        #expect(rows.rows[0] == ["user": "ada", "n": "1.50", "ok": "true", "tags": #"["a"]"#])
        #expect(rows.rows[1] == ["user": "grace", "extra": "null"])
        let found = messages { () throws(WorkflowErrors) in try Workflow.jsonRows(#"[{"a":1}, 2]"#, file: "rows.json") }
        #expect(found.contains { $0.contains("row 2 is 2, not an object") }, "\(found)")
        let notList = messages { () throws(WorkflowErrors) in try Workflow.jsonRows(#"{"a":1}"#, file: "rows.json") }
        #expect(notList.contains { $0.contains("expected a list of objects") }, "\(notList)")
    }

    @Test func aFileThatIsNeitherCSVNorJSONIsRefused() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-rows-\(UUID()).txt")
        try Data("a\n1\n".utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let found = messages { () throws(WorkflowErrors) in try Workflow.loadRows(contentsOf: url, name: "rows.txt") }
        #expect(found.first?.contains("a data file is .csv") == true, "\(found)")
    }

    @Test func dataTemplatesAreCheckedAgainstTheColumns() {
        func problems(_ columns: [String]?) -> [String] {
            do {
                _ = try Workflow.parse(
                    """
                    auth:
                      login: { url: "http://x.test/login?u={{data.user}}", token: $.t }
                    steps:
                      - { id: a, url: "http://x.test/{{data.usr}}" }
                      - { id: data, url: "http://x.test/" }
                    """, file: "flow.yaml", environment: [:], dataColumns: columns)
                return []
            } catch {
                return error.errors.map(\.description)
            }
        }
        let withColumns = problems(["user", "id"])
        #expect(
            withColumns.contains {
                $0.hasPrefix("flow.yaml:4:") && $0.contains("no column 'usr' (did you mean 'user'?); it has user, id")
            }, "\(withColumns)")
        #expect(
            withColumns.contains { $0.hasPrefix("flow.yaml:2:") && $0.contains("shared by every row") },
            "\(withColumns)")
        #expect(withColumns.contains { $0.hasPrefix("flow.yaml:5:") && $0.contains("'data' is reserved") })
        let withoutData = problems(nil)
        #expect(withoutData.contains { $0.contains("{{data.usr}} is a column of a data file: run with --data") })
    }
}
