import Foundation
import HTTPTypes
import Orchestra
import OrchestraTestKit
import OrchestraWorkflow
import TestSupport
import Testing

/// `paginate:`: the next page by a URL in the body, a `Link` header, a cursor, or a page number;
/// the pages' items gathered into `{{STEP.items}}`, or taken by one `for_each` step as the pages
/// arrive.
@Suite("WorkflowRunner: paginate", .timeLimit(.minutes(1)), .takesTurns)
struct PaginateRunnerTests {
    /// Page `page` (from 1) of `total` items `perPage` at a time: `{"data":[{"id":N}…]}`.
    static func items(page: Int, total: Int, perPage: Int) -> (ids: [Int], isLast: Bool) {
        let start = (page - 1) * perPage
        let end = min(total, start + perPage)
        return (start < end ? Array(start..<end) : [], end >= total)
    }

    static func data(_ ids: [Int]) -> String {
        "[" + ids.map { #"{"id":\#($0)}"# }.joined(separator: ",") + "]"
    }

    static func query(_ request: HTTPRequest, _ name: String) -> String? {
        URLComponents(string: "http://x.test" + (request.path ?? ""))?.queryItems?.first { $0.name == name }?.value
    }

    @Test func nextURLsInTheBodyAreFollowedAndTheItemsGatheredForAnyReader() async throws {
        let posted = Locked<Data?>(nil)
        let transport = ScriptedHTTPTransport { request, body in
            guard request.path!.hasPrefix("/users") else {
                posted.withLock { $0 = body }
                return respond()
            }
            let page = Int(Self.query(request, "page") ?? "1")!
            let (ids, isLast) = Self.items(page: page, total: 7, perPage: 3)
            let next = isLast ? "null" : #""/users?page=\#(page + 1)""#
            return respond(200, #"{"data":\#(Self.data(ids)),"links":{"next":\#(next)},"page":\#(page)}"#)
        }
        let workflow = try parse(
            """
            steps:
              - id: users
                url: "http://x.test/users"
                paginate: { next: $.links.next, items: $.data }
                captures: { last: $.page }
              - { id: all, method: POST, url: "http://x.test/all", body: { users: "{{users.items}}", last: "{{users.last}}" } }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report.steps.map { "\($0.id): \($0.error ?? "-")" })")
        #expect(transport.requests.map(\.path) == ["/users", "/users?page=2", "/users?page=3", "/all"])
        let users = try #require(report["users"])
        #expect(users.items?.map(\.id) == ["users[page 1]", "users[page 2]", "users[page 3]"])
        #expect(users.itemCounts?.succeeded == 3 && users.attempts == 3)
        #expect(users.note == nil)
        #expect(users.captures.first { $0.key == "last" }?.value == .integer(3), "captures from the last page")
        let sent = try JSONValue(parsing: try #require(posted.withLock { $0 }))
        #expect(sent["users"] == (try JSONValue(parsing: Data(Self.data(Array(0..<7)).utf8))))
        #expect(sent["last"] == .integer(3), "a template that is one reference keeps the value's type")
    }

    /// The last page is held until an element's request has come: a `for_each` that waited for
    /// every page would never send one, and the run would fail at the hang guard.
    @Test func aForEachTakesTheItemsAsThePagesArriveByTheLinkHeader() async throws {
        let firstItem = AsyncEvent()
        let transport = ScriptedHTTPTransport { request, _ in
            let path = request.path!
            if path.hasPrefix("/items/") {
                if path == "/items/0" { firstItem.signal() }
                return respond(200, #"{"ok":true}"#)
            }
            let page = Int(Self.query(request, "page") ?? "1")!
            let (ids, isLast) = Self.items(page: page, total: 10, perPage: 4)
            if isLast { try await firstItem.wait() }
            var headers: HTTPFields = [:]
            if !isLast {
                headers[HTTPField.Name("Link")!] =
                    #"<http://x.test/list?page=\#(page + 1)>; rel="next", <http://x.test/list>; rel="first""#
            }
            return respond(200, #"{"data":\#(Self.data(ids))}"#, headers: headers)
        }
        let workflow = try parse(
            """
            steps:
              - id: list
                url: "http://x.test/list"
                paginate: { next: { header: Link }, items: $.data }
              - id: each
                for_each: "{{list.items}}"
                url: "http://x.test/items/{{item.id}}"
              - { id: done, url: "http://x.test/done", needs: [each] }
            """)
        let report = try await withHangGuard(.seconds(20)) {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report.steps.map { "\($0.id): \($0.error ?? "-")" })")
        let paths = transport.requests.map(\.path!)
        #expect(paths.filter { $0.hasPrefix("/list") } == ["/list", "/list?page=2", "/list?page=3"])
        #expect(Set(paths.filter { $0.hasPrefix("/items/") }) == Set((0..<10).map { "/items/\($0)" }))
        #expect(paths.filter { $0.hasPrefix("/items/") }.count == 10, "each item once")
        #expect(paths.last == "/done")
        let each = try #require(report["each"])
        #expect(each.itemCounts?.total == 10 && each.itemCounts?.succeeded == 10)
        #expect(report["list"]?.items?.count == 3)
    }

    @Test func aCursorGoesWherePageCursorSaysUntilThePagesGiveNone() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            guard request.path!.hasPrefix("/feed") else { return respond() }
            let cursor = Self.query(request, "after") ?? ""
            let offset = cursor.isEmpty ? 0 : Int(cursor.dropFirst())!
            let ids = Array(offset..<min(5, offset + 2))
            let next = offset + 2 >= 5 ? "null" : #""c\#(offset + 2)""#
            return respond(200, #"{"items":\#(Self.data(ids)),"next_cursor":\#(next)}"#)
        }
        let workflow = try parse(
            """
            steps:
              - id: feed
                url: "http://x.test/feed?after={{page.cursor}}&n={{page.number}}"
                paginate: { cursor: $.next_cursor, items: $.items }
              - { id: each, for_each: "{{feed.items}}", url: "http://x.test/e/{{item.id}}" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report.steps.map { "\($0.id): \($0.error ?? "-")" })")
        let feeds = transport.requests.map(\.path!).filter { $0.hasPrefix("/feed") }
        #expect(feeds == ["/feed?after=&n=1", "/feed?after=c2&n=2", "/feed?after=c4&n=3"])
        #expect(report["each"]?.itemCounts?.succeeded == 5)
    }

    @Test func numberedPagesEndAtTheFirstEmptyPageOrAtMaxPages() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            if request.path!.hasPrefix("/e/") { return respond() }
            let page = Int(Self.query(request, "p") ?? "1")!
            return respond(200, #"{"data":\#(Self.data(Self.items(page: page, total: 5, perPage: 2).ids))}"#)
        }
        let counted = try parse(
            """
            steps:
              - { id: pages, url: "http://x.test/n?p={{page.number}}", paginate: { items: $.data } }
              - { id: each, for_each: "{{pages.items}}", url: "http://x.test/e/{{item.id}}" }
            """)
        let report = await WorkflowRunner(workflow: counted, transport: transport).run(clock: ManualClock())
        #expect(report.allSucceeded)
        #expect(report["pages"]?.items?.count == 4, "3 pages of items and the empty one")
        #expect(report["each"]?.itemCounts?.succeeded == 5)
        let sent = transport.requests.map(\.path!).filter { $0.hasPrefix("/e/") }
        #expect(Set(sent) == Set((0..<5).map { "/e/\($0)" }) && sent.count == 5)

        let bounded = try parse(
            """
            steps:
              - { id: pages, url: "http://x.test/n?p={{page.number}}", paginate: { items: $.data, max_pages: 2 } }
            """)
        let stopped = await WorkflowRunner(workflow: bounded, transport: transport).run(clock: ManualClock())
        #expect(stopped.allSucceeded)
        #expect(stopped["pages"]?.items?.count == 2)
        #expect(stopped["pages"]?.note == "max_pages (2) reached; more pages were left")
    }

    @Test func aNextPageOnAnotherOriginOrOneGivenBeforeFailsTheStep() async throws {
        let elsewhere = ScriptedHTTPTransport { _, _ in
            respond(200, #"{"data":[],"next":"https://evil.test/steal"}"#)
        }
        let workflow = try parse(
            """
            steps:
              - { id: list, url: "http://x.test/list", paginate: { next: $.next, items: $.data } }
            """)
        let report = await WorkflowRunner(workflow: workflow, transport: elsewhere).run(clock: ManualClock())
        #expect(report["list"]?.state == .failed)
        #expect(report["list"]?.error?.contains("is on another origin than the first page (http://x.test:80)") == true)
        #expect(elsewhere.requests.count == 1, "nothing sent to evil.test")

        let loop = ScriptedHTTPTransport { request, _ in
            respond(200, request.path == "/list" ? #"{"next":"/list?b"}"# : #"{"next":"/list?b"}"#)
        }
        let looping = await WorkflowRunner(workflow: workflow, transport: loop).run(clock: ManualClock())
        #expect(looping["list"]?.state == .failed)
        #expect(looping["list"]?.error?.contains("an earlier page gave ('/list?b'): the pages would never end") == true)
        #expect(loop.requests.count == 2)
    }

    /// Page 2 fails: the elements of page 1 were sent, the for_each step fails naming the
    /// pages' step, and what needs it is skipped.
    @Test func aFailedPageEndsTheItemsAndFailsTheStepTakingThem() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            let path = request.path!
            if path.hasPrefix("/e/") { return respond() }
            if path == "/list?page=2" { return respond(500, #"{"error":"boom"}"#) }
            return respond(200, #"{"data":\#(Self.data([0, 1, 2])),"next":"/list?page=2"}"#)
        }
        let workflow = try parse(
            """
            steps:
              - { id: list, url: "http://x.test/list", paginate: { next: $.next, items: $.data } }
              - { id: each, for_each: "{{list.items}}", url: "http://x.test/e/{{item.id}}" }
              - { id: after, url: "http://x.test/after", needs: [each] }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["list"]?.state == .failed)
        #expect(
            report["list"]?.error?.hasPrefix("page 2: expected 2xx, got 500") == true, "\(report["list"]?.error ?? "")")
        let each = try #require(report["each"])
        #expect(each.state == .failed)
        #expect(
            each.error?.hasPrefix("for_each: step 'list' failed: page 2: expected 2xx, got 500") == true,
            "\(each.error ?? "")")
        #expect(each.error?.hasSuffix("(after 3 of its items)") == true, "\(each.error ?? "")")
        #expect(each.itemCounts?.succeeded == 3)
        #expect(report["after"]?.state == .skipped)
    }

    /// Pages that never end (each gives a new next page) and a for_each skipped by its `when:`:
    /// the pages stop as the for_each is skipped, rather than filling memory or waiting for it.
    @Test func thePagesStopWhenTheStepTakingTheirItemsIsSkipped() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            let page = Int(Self.query(request, "page") ?? "1")!
            return respond(
                200, #"{"data":\#(Self.data(Array(page * 100..<page * 100 + 100))),"next":"/list?page=\#(page + 1)"}"#)
        }
        let workflow = try parse(
            """
            vars: { go: "no" }
            steps:
              - { id: list, url: "http://x.test/list", paginate: { next: $.next, items: $.data, max_pages: 100000 } }
              - { id: each, when: "{{vars.go}} == 'yes'", for_each: "{{list.items}}", url: "http://x.test/e/{{item.id}}" }
            """)
        let report = try await withHangGuard {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report["each"]?.state == .skipped)
        let list = try #require(report["list"])
        #expect(list.state == .succeeded)
        #expect(list.note?.hasSuffix("'each', which takes its items, ended") == true, "\(list.note ?? "")")
        #expect(transport.requests.count < 100, "pages stopped at once, not at max_pages")
    }

    /// `gate` is skipped by its `when:`, so `list`, which needs it, is skipped: `each`, which
    /// takes `list`'s items and starts with `list`, is skipped too, never failed by pages that
    /// never came (30 runs: scheduling decides which of `list` and `each` starts first).
    @Test func aForEachIsSkippedWithThePagesStepThatASkipSkipped() async throws {
        let transport = ScriptedHTTPTransport { _, _ in respond(200, #"{"data":[1,2],"next":null}"#) }
        let workflow = try parse(
            """
            vars: { go: "no" }
            steps:
              - { id: gate, when: "{{vars.go}} == 'yes'", url: "http://x.test/gate" }
              - { id: list, needs: [gate], url: "http://x.test/list", paginate: { next: $.next, items: $.data } }
              - { id: each, for_each: "{{list.items}}", url: "http://x.test/e/{{item}}" }
            """)
        for _ in 0..<30 {
            let report = try await withHangGuard {
                await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
            }
            #expect(
                report.steps.map(\.state) == [.skipped, .skipped, .skipped],
                "\(report.steps.map { "\($0.id): \($0.error ?? "-")" })")
        }
        #expect(transport.requests.isEmpty)
    }

    /// `each` needs `total`, which needs `list`: `each` cannot take items as they arrive (`list`
    /// would wait for it, and it for `list`), so it gets the whole list.
    @Test func aForEachThatWaitsForThePagesThroughAnotherStepGetsTheWholeList() async throws {
        let transport = ScriptedHTTPTransport { request, _ in
            guard request.path!.hasPrefix("/list") else { return respond() }
            let page = Int(Self.query(request, "page") ?? "1")!
            let (ids, isLast) = Self.items(page: page, total: 300, perPage: 10)
            let next = isLast ? "null" : #""/list?page=\#(page + 1)""#
            return respond(200, #"{"data":\#(Self.data(ids)),"next":\#(next),"total":300}"#)
        }
        let workflow = try parse(
            """
            limit: 1
            steps:
              - { id: list, url: "http://x.test/list", paginate: { next: $.next, items: $.data } }
              - { id: total, url: "http://x.test/total", needs: [list] }
              - { id: each, for_each: "{{list.items}}", needs: [total], url: "http://x.test/e/{{item.id}}" }
            """)
        let report = try await withHangGuard(.seconds(20)) {
            await WorkflowRunner(workflow: workflow, transport: transport).run(clock: ManualClock())
        }
        #expect(report.allSucceeded, "\(report.steps.map { "\($0.id): \($0.error ?? "-")" })")
        #expect(report["each"]?.itemCounts?.succeeded == 300)
    }

    @Test func theFileSaysWhatIsWrongWithAPaginateStep() {
        func messages(_ text: String) -> [String] { errors(text).map(\.description) }
        let cursorNowhere = messages(
            """
            steps:
              - { id: a, url: "http://x.test/a", paginate: { cursor: $.c, items: $.d } }
            """)
        #expect(cursorNowhere.contains { $0.contains("put {{page.cursor}} in its url") && $0.contains("flow.yaml:2:") })
        let uncounted = messages(
            """
            steps:
              - { id: a, url: "http://x.test/a", paginate: { max_pages: 3 } }
            """)
        #expect(uncounted.contains { $0.contains("counts pages until one has no items: give items:") })
        let both = messages(
            """
            steps:
              - { id: a, url: "http://x.test/a", paginate: { next: $.n, cursor: $.c } }
            """)
        #expect(both.contains { $0.contains("not both") })
        let pageElsewhere = messages(
            """
            steps:
              - { id: a, url: "http://x.test/a?p={{page.number}}" }
            """)
        #expect(
            pageElsewhere.contains {
                $0.contains("names step 'page', which does not exist")
                    && $0.contains("{{page.number}} and {{page.cursor}} are the page of a step with paginate:")
            })
        // A step named page is a step like any other, unless a step of the file paginates.
        #expect(
            messages(
                """
                steps:
                  - { id: page, url: "http://x.test/a", captures: { n: $.n } }
                  - { id: b, url: "http://x.test/b?n={{page.n}}" }
                """
            ).isEmpty)
        let reserved = messages(
            """
            steps:
              - { id: page, url: "http://x.test/a" }
              - { id: list, url: "http://x.test/l?p={{page.number}}", paginate: { items: $.d } }
            """)
        #expect(
            reserved.contains { $0.contains("'page' is the page of a paginate step") && $0.contains("(step 'list')") })
        let unknownPart = messages(
            """
            steps:
              - { id: list, url: "http://x.test/l?p={{page.number}}&s={{page.size}}", paginate: { items: $.d } }
            """)
        #expect(unknownPart.contains { $0.contains("a page has only {{page.number}} (from 1) and {{page.cursor}}") })
        let typo = messages(
            """
            steps:
              - { id: a, url: "http://x.test/a", paginate: { nxt: $.n } }
            """)
        #expect(typo.contains { $0.contains("did you mean 'next'?") })
        let noItems = messages(
            """
            steps:
              - { id: a, url: "http://x.test/a", paginate: { next: $.n } }
              - { id: b, for_each: "{{a.items}}", url: "http://x.test/b" }
            """)
        #expect(noItems.contains { $0.contains("step 'a' has no capture 'items'") })
        let both2 = messages(
            """
            steps:
              - { id: a, url: "http://x.test/a", captures: { l: $.l } }
              - { id: b, for_each: "{{a.l}}", url: "http://x.test/b", paginate: { next: $.n } }
            """)
        #expect(both2.contains { $0.contains("a step has for_each or paginate, not both") })
        let polled = messages(
            """
            steps:
              - { id: a, url: "http://x.test/a", paginate: { next: $.n }, until: { max_attempts: 3 } }
            """)
        #expect(polled.contains { $0.contains("a step has until or paginate, not both") })
    }
}
