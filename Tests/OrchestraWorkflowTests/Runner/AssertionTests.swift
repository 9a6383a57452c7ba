import Foundation
import HTTPTypes
import OrchestraTestKit
import TestSupport
import Testing

@testable import OrchestraWorkflow

@Suite("assert:", .timeLimit(.minutes(1)), .takesTurns)
struct AssertionTests {
    static let user = #"""
        {"user":{"name":"Ada","id":7},"items":[1,2,3],"price":12.5,"email":"ada@example.com",
         "tags":["new","sale"],"state":"active","token":"t","nothing":null,"big":12345678901234567890,"ratio":1.0}
        """#

    func run(
        _ text: String, body: String = user, headers: HTTPFields = [.contentType: "application/json"]
    )
        async throws -> WorkflowReport
    {
        let workflow = try Workflow.parse(text, file: "flow.yaml", environment: [:])
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/ids" { return respond(200, #"{"ids":[{"id":1},{"id":2},{"id":3}]}"#) }
            if let path = request.path, path.hasPrefix("/item/") {
                return respond(200, #"{"id":\#(path.dropFirst(6))}"#)
            }
            return respond(200, body, headers: headers)
        }
        return try await withHangGuard { () async -> WorkflowReport in
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
    }

    func step(_ asserts: String, vars: String = "") -> String {
        """
        \(vars)
        steps:
          - id: a
            url: "http://x.test/a"
            assert:
        \(asserts.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n"))
        """
    }

    @Test func everyOperatorPassesOnAMatchingResponse() async throws {
        let report = try await run(
            step(
                #"""
                - $.user.name: "Ada"
                - $.user: { equals: { id: 7, name: Ada } }
                - $.items: { count: 3 }
                - $.items: { count: { ">": 2 } }
                - $.price: { ">": 10, "<=": 100, "!=": 13 }
                - $.ratio: 1
                - $.big: 12345678901234567890
                - $.email: { matches: "^[^@]+@example\\.com$" }
                - $.tags: { contains: "new" }
                - $.email: { contains: "@" }
                - $.user: { contains: name }
                - $.token: { exists: true }
                - $.missing: { exists: false }
                - $.nothing: { exists: true, type: null }
                - $.user.id: { type: integer }
                - $.price: { type: number }
                - $.state: { one_of: [active, pending] }
                - $.user.id: "{{vars.id}}"
                - $.price: { ">": "{{vars.low}}" }
                - header content-type: { contains: json }
                - body: { contains: "\"state\":\"active\"" }
                - status: 200
                - status: { one_of: [200, 201] }
                - duration: { "<": 500ms }
                """#, vars: "vars: { id: 7, low: \"9.5\" }"))
        let a = try #require(report["a"])
        #expect(a.state == .succeeded, "\(a.error ?? "")")
        #expect(a.assertions.count == 27)
        #expect(a.assertions.filter { !$0.passed }.map(\.description) == [])
        #expect(
            a.assertions.first
                == AssertionResult(
                    subject: "$.user.name", operatorName: "==", expected: #""Ada""#, actual: #""Ada""#, passed: true))
    }

    @Test func everyFailingCheckIsReportedWithWhatWasExpectedAndWhatCame() async throws {
        let report = try await run(
            step(
                #"""
                - $.user.name: "Grace"
                - $.items: { count: 2 }
                - $.price: { "<": 10 }
                - $.email: { matches: "^x" }
                - $.tags: { contains: "old" }
                - $.token: { exists: false }
                - $.missing: "x"
                - $.user.id: { type: string }
                - $.state: { one_of: [pending] }
                - $.state: { ">": 1 }
                - header X-Missing: { exists: true }
                - duration: { ">": 1s }
                - $.user.name: Ada
                """#))
        let a = try #require(report["a"])
        #expect(a.state == .failed)
        let failed = a.assertions.filter { !$0.passed }.map(\.description)
        #expect(
            failed == [
                #"$.user.name == "Grace": got "Ada""#,
                "$.items count 2: got 3",
                "$.price < 10: got 12.5",
                #"$.email matches "^x": got "ada@example.com""#,
                #"$.tags contains "old": got ["new","sale"]"#,
                #"$.token exists false: got "t""#,
                #"$.missing == "x": not found in the response"#,
                "$.user.id type string: got 7",
                #"$.state one_of ["pending"]: got "active""#,
                #"$.state > 1: got "active", not a number"#,
                "header X-Missing exists true: the response has no 'X-Missing' header",
                "duration > 1 s: got 0 ms",
            ])
        #expect(a.assertions.count == 13 && a.assertions.last?.passed == true)
        #expect(a.error?.hasPrefix("12 of 13 assertions failed: $.user.name == \"Grace\"") == true, "\(a.error ?? "")")
    }

    @Test func aBodyThatIsNotJSONFailsEveryPathCheckSayingSo() async throws {
        let report = try await run(
            step("- $.id: 1\n- body: { contains: oops }\n- $.id: { exists: false }"), body: "oops",
            headers: [.contentType: "text/plain"])
        let a = try #require(report["a"])
        #expect(a.state == .failed)
        #expect(a.assertions.map(\.passed) == [false, true, true])
        #expect(a.assertions[0].reason?.hasPrefix("the response (text/plain) is not JSON") == true)
    }

    @Test func eachForEachElementChecksItsOwnResponseWithItsItem() async throws {
        let report = try await run(
            """
            steps:
              - { id: list, url: "http://x.test/ids", captures: { ids: $.ids } }
              - id: each
                for_each: "{{list.ids}}"
                url: "http://x.test/item/{{item.id}}"
                assert:
                  - $.id: "{{item.id}}"
                  - $.id: { "<": 3 }
            """)
        let each = try #require(report["each"])
        #expect(each.state == .failed)
        let items = try #require(each.items)
        #expect(items.map(\.state) == [.succeeded, .succeeded, .failed])
        #expect(items[2].assertions.map(\.passed) == [true, false])
        #expect(items[2].error == "1 of 2 assertions failed: $.id < 3: got 3")
    }

    @Test func badAssertionsAreErrorsWithTheirLineAndField() {
        let messages = errors(
            """
            steps:
              - id: a
                url: "http://x.test/a"
                assert:
                  - price: 1
                  - $.a[: 1
                  - header: 1
                  - $.a: { bigger: 1 }
                  - $.a: { ">": ten }
                  - $.a: { matches: "(" }
                  - $.a: { type: integr }
                  - $.a: { exists: yes please }
                  - $.a: { count: -1 }
                  - duration: { "<": soon }
                  - duration: 5
                  - $.a: { one_of: x }
                  - $.a: "{{nope.x}}"
                  - $.a: {}
            """
        ).map(\.description)
        let expected: [(line: Int, text: String)] = [
            (5, "unknown subject 'price'"),
            (6, "capture path '$.a['"),
            (7, "does not name a header"),
            (8, "unknown field 'bigger'"),
            (9, "must be a number"),
            (10, "is not a regular expression"),
            (11, "did you mean 'integer'?"),
            (12, "must be true or false"),
            (13, "a length ≥ 0"),
            (14, "must be a duration"),
            (15, "duration is compared with a duration"),
            (16, "must be a list of values"),
            (17, "nope"),
            (18, "no check"),
        ]
        for (line, text) in expected {
            #expect(
                messages.contains { $0.hasPrefix("flow.yaml:\(line):") && $0.contains(text) },
                "line \(line): \(text) in \(messages)")
        }
        #expect(messages.contains { $0.contains("field 'assert[3].$.a.bigger'") }, "\(messages)")
    }
}
