import Foundation
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("Variables files (--vars-file)", .timeLimit(.minutes(1)), .takesTurns)
struct VariablesFileTests {
    /// Writes `text` to a fresh file named `name`.
    func file(_ name: String, _ text: String) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("orchestra-vars-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test func yamlAndJSONFilesAreMappingsOfTextNumbersAndBooleans() throws {
        let yaml = try Workflow.loadVariables(
            contentsOf: file("vars.yaml", "base: http://x.test\nretries: 3\nverbose: true\n"))
        #expect(yaml == ["base": "http://x.test", "retries": "3", "verbose": "true"])
        let json = try Workflow.loadVariables(contentsOf: file("vars.json", #"{"base": "http://y.test", "n": 1.5}"#))
        #expect(json == ["base": "http://y.test", "n": "1.5"])
    }

    @Test func dotEnvLinesWithCommentsExportQuotesAndWindowsLineEnds() throws {
        let text =
            "# secrets\r\nexport API_KEY=abc=def\r\n\r\nPASSWORD=\"p a\\\"ss\\n\"\r\nRAW='x\\ny'\r\n  SPACED =  v  \r\nEMPTY=\r\n"
        let variables = try Workflow.loadVariables(contentsOf: file("local.env", text))
        #expect(
            variables == [
                "API_KEY": "abc=def", "PASSWORD": "p a\"ss\n", "RAW": "x\\ny", "SPACED": "v", "EMPTY": "",
            ])
    }

    @Test func everyBadLineIsReportedWithTheFileAndLine() throws {
        let url = try file(".env", "GOOD=1\nno equals sign\nbad name=2\n")
        do {
            _ = try Workflow.loadVariables(contentsOf: url, name: "ci.env")
            Issue.record("bad lines were accepted")
        } catch {
            let messages = error.errors.map(\.description)
            #expect(messages.count == 2, "\(messages)")
            #expect(
                messages.first?.hasPrefix("ci.env:2:1: error: expected NAME=value, got 'no equals sign'") == true,
                "\(messages)")
            #expect(
                messages.last?.hasPrefix("ci.env:3:1: error: 'bad name' is not a variable name") == true, "\(messages)")
        }
    }

    @Test func aListValueOrAMissingFileIsRefusedNamingIt() throws {
        let url = try file("vars.yaml", "base: http://x.test\nhosts: [a, b]\n")
        do {
            _ = try Workflow.loadVariables(contentsOf: url, name: "vars.yaml")
            Issue.record("a list was accepted as a variable")
        } catch {
            let message = error.errors.map(\.description).joined(separator: "\n")
            #expect(message.contains("vars.yaml:2:") && message.contains("hosts"), "\(message)")
        }
        do {
            _ = try Workflow.loadVariables(contentsOf: URL(fileURLWithPath: "/nonexistent/vars.env"))
            Issue.record("a missing file was accepted")
        } catch {
            #expect(error.errors.first?.description.contains("no such file") == true, "\(error.errors)")
        }
    }
}
