import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

@Suite("WorkflowRunner: header captures", .timeLimit(.minutes(1)), .takesTurns)
struct HeaderCaptureTests {
    @Test func aHeaderCaptureIsUsedByALaterStepWithoutAJSONBody() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path {
            case "/things":
                respond(201, "created", headers: [.location: "/things/7", .eTag: #""v1""#, .contentType: "text/plain"])
            default: respond(200, "{}")
            }
        }
        let workflow = try parse(
            """
            steps:
              - id: create
                method: POST
                url: "http://x.test/things"
                captures:
                  where: { header: location }    # any case
                  tag: { header: ETag }
              - id: read
                url: "http://x.test{{create.where | raw}}"
                headers: { If-None-Match: "{{create.tag}}" }
            """)
        #expect(workflow.step("create")?.captures.map(\.source) == [.header(.location), .header(.eTag)])
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report)")
        #expect(
            report["create"]?.captures == [
                JSONValue.Member("where", .string("/things/7")), JSONValue.Member("tag", .string(#""v1""#)),
            ])
        let read = try #require(transport.requests.first { $0.path != "/things" })
        #expect(read.path == "/things/7")
        #expect(read.headerFields[.ifNoneMatch] == #""v1""#)
    }

    @Test func aMissingHeaderFailsTheStepListingTheHeadersThereWere() async throws {
        let transport = ScriptedHTTPTransport { _, _ in
            respond(200, "ok", headers: [.contentType: "text/plain", .cacheControl: "no-store"])
        }
        let workflow = try parse(
            """
            steps:
              - { id: a, url: "http://x.test/a", captures: { tag: { header: ETag } } }
              - { id: b, url: "http://x.test/b/{{a.tag}}" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(
            report["a"]?.error
                == "capture 'tag': the response has no 'ETag' header (it has: Content-Type, Cache-Control)")
        #expect(report["b"]?.state == .skipped)
    }

    @Test func aBodyCaptureStillNeedsJSONAndOnlyItIsNamed() async throws {
        let transport = ScriptedHTTPTransport { _, _ in
            respond(200, "plain text", headers: [.eTag: "x", .contentType: "text/plain"])
        }
        let workflow = try parse(
            """
            steps:
              - { id: a, url: "http://x.test/a", captures: { tag: { header: ETag }, id: $.id } }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(
            report["a"]?.error?.hasPrefix("the response (text/plain) is not JSON, so the captures id cannot be read")
                == true, "\(String(describing: report["a"]?.error))")
    }

    @Test func aForEachStepCapturesOneHeaderValuePerElement() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path == "/list" { return respond(200, #"{"ids":[3,1,2]}"#) }
            let id = request.path!.split(separator: "/").last!
            return respond(200, "", headers: [.eTag: "tag-\(id)"])
        }
        let workflow = try parse(
            """
            steps:
              - { id: list, url: "http://x.test/list", captures: { ids: $.ids } }
              - { id: each, for_each: "{{list.ids}}", url: "http://x.test/items/{{item}}", captures: { tag: { header: etag } } }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report)")
        #expect(
            report["each"]?.captures == [
                JSONValue.Member("tag", .array([.string("tag-3"), .string("tag-1"), .string("tag-2")]))
            ])
    }

    @Test func theAuthBlockCanReadItsTokenFromAHeader() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path {
            case "/login":
                respond(
                    204, "", headers: [HTTPField.Name("X-Auth-Token")!: "t1", HTTPField.Name("X-Expires-In")!: "3600"])
            default: request.headerFields[.authorization] == "Bearer t1" ? respond(200, "{}") : respond(401, "{}")
            }
        }
        let workflow = try parse(
            """
            auth:
              login: { url: "http://x.test/login", token: { header: x-auth-token }, expires_in: { header: X-Expires-In } }
            steps:
              - { id: a, url: "http://x.test/a" }
            """)
        #expect(workflow.auth?.login.token == .header(HTTPField.Name("X-Auth-Token")!))
        #expect(workflow.auth?.login.expiresIn == .header(HTTPField.Name("X-Expires-In")!))
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report)")
        #expect(report.logins == 1)
    }

    @Test func aLoginWithoutTheTokenHeaderFailsTheStepsSayingSo() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            request.path == "/login"
                ? respond(200, "welcome", headers: [.contentType: "text/plain"]) : respond(200, "{}")
        }
        let workflow = try parse(
            """
            auth:
              login: { url: "http://x.test/login", token: { header: X-Auth-Token } }
            steps:
              - { id: a, url: "http://x.test/a" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        let error = try #require(report["a"]?.error)
        #expect(
            error.contains(
                "login POST http://x.test/login: token: the response has no 'X-Auth-Token' header (it has: Content-Type)"
            ), "\(error)")
        #expect(!transport.requests.contains { $0.path == "/a" }, "nothing is sent without a token")
    }

    @Test func aRegexCapturesItsFirstGroupFromATextBodyAndANonMatchFailsTheStep() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            switch request.path {
            case "/page": respond(200, "<a href=\"/orders?id=4711\">order</a>", headers: [.contentType: "text/html"])
            default: respond(200, #"{"items":[{"id":1},{"id":2}]}"#)
            }
        }
        let workflow = try parse(
            """
            steps:
              - id: page
                url: "http://x.test/page"
                captures:
                  id: { regex: "id=(\\\\d+)" }
                  whole: { regex: "<a [^>]+>" }
              - { id: order, url: "http://x.test/orders/{{page.id}}", captures: { ids: "$.items[*].id", last: "$.items[-1].id" } }
              - { id: miss, url: "http://x.test/page", captures: { n: { regex: "nothing here" } } }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["page"]?.captures.map(\.value) == [.string("4711"), .string("<a href=\"/orders?id=4711\">")])
        #expect(transport.requests.contains { $0.path == "/orders/4711" })
        #expect(report["order"]?.captures.map(\.value) == [.array([.integer(1), .integer(2)]), .integer(2)])
        #expect(report["miss"]?.state == .failed)
        #expect(
            report["miss"]?.error?.hasPrefix(
                "capture 'n': the regular expression 'nothing here' does not match the body")
                == true, "\(report["miss"]?.error ?? "")")
    }

    @Test func aBadRegexOrTwoSourcesAreErrorsWithTheirLine() throws {
        let messages = errors(
            """
            steps:
              - id: a
                url: "http://x.test/"
                captures:
                  x: { regex: "(" }
                  y: { regex: "a", header: B }
            """
        ).map(\.description)
        #expect(
            messages.contains { $0.hasPrefix("flow.yaml:5:") && $0.contains("is not a regular expression") },
            "\(messages)")
        #expect(messages.contains { $0.hasPrefix("flow.yaml:6:") && $0.contains("give one of them") }, "\(messages)")
    }
}
