import Foundation
import HTTPTypes
import Hummingbird
import Orchestra

/// Paginated lists for `paginate:` (issue 37): `/pages/{total}` serves `total` items
/// (`{"id":N}`) `per_page` at a time, its next page given as the API styles do:
///
/// - `style=next` (the default): `{"data":[…],"links":{"next":"/pages/…&page=2"}}`, a relative
///   URL, `null` on the last page;
/// - `style=link`: `{"data":[…]}` and `Link: <http://host/pages/…&page=2>; rel="next"`;
/// - `style=cursor`: `{"data":[…],"next_cursor":"c20"}` (`?cursor=c20` asks for it), `null` last;
/// - `style=number`: `?page=N`, and a page past the end has `"data":[]`.
///
/// `hold_last=true` holds the last page until the first item's own route
/// (`/page-items/0`) has been asked for, at most 30 s, and answers 409 if it never was: a
/// client that takes items as pages arrive gets it at once, one that waits for every page
/// gets a failure rather than a wait.
extension DemoRoutes {
    static let maximumPageItems = 10_000_000

    static func addPageRoutes(to router: Router<BasicRequestContext>, state: DemoServerState) {
        router.get("/page-items/:id") { _, context -> Response in
            let id = try context.parameters.require("id", as: Int.self)
            return json("{\"id\":\(id),\"name\":\"Item \(id)\"}")
        }
        router.get("/pages/:total") { request, context -> Response in
            let total = try context.parameters.require("total", as: Int.self)
            let query = request.uri.queryParameters
            let perPage = query.get("per_page", as: Int.self) ?? 10
            let style = query.get("style").map { String($0) } ?? "next"
            let holdsLast = query.get("hold_last").map { String($0) } == "true"
            guard (0...maximumPageItems).contains(total), (1...10_000).contains(perPage) else {
                throw HTTPError(.badRequest, message: "total must be 0…\(maximumPageItems) and per_page 1…10000")
            }
            guard ["next", "link", "cursor", "number"].contains(style) else {
                throw HTTPError(.badRequest, message: "style must be next, link, cursor or number")
            }
            let start: Int
            if style == "cursor" {
                let cursor = query.get("cursor").map { String($0) } ?? ""
                guard cursor.isEmpty || cursor.hasPrefix("c"),
                    let offset = cursor.isEmpty ? 0 : Int(cursor.dropFirst()),
                    offset >= 0
                else {
                    throw HTTPError(.badRequest, message: "cursor '\(cursor)' is not one this list gave")
                }
                start = offset
            } else {
                let page = query.get("page", as: Int.self) ?? 1
                guard page >= 1, page <= maximumPageItems else {
                    throw HTTPError(.badRequest, message: "page must be 1…\(maximumPageItems)")
                }
                start = (page - 1) * perPage
            }
            let end = min(total, start + perPage)
            let isLast = end >= total
            if holdsLast, isLast {
                let asked = state.arrivalEvent(path: "/page-items/0", count: 1)
                let came = try await withThrowingTaskGroup(of: Bool.self) { group in
                    group.addTask {
                        try await asked.wait()
                        return true
                    }
                    group.addTask {
                        try await state.delay(.seconds(30))
                        return false
                    }
                    defer { group.cancelAll() }
                    return try await group.next() ?? false
                }
                guard came else {
                    return json(
                        "{\"error\":\"the last page was held 30 s and no item was asked for: the client waited for every page\"}",
                        status: .conflict)
                }
            }
            var body = "{\"data\":["
            body.reserveCapacity((end - min(start, end)) * 12 + 96)
            if start < end {
                for id in start..<end {
                    if id > start { body += "," }
                    body += "{\"id\":\(id)}"
                }
            }
            body += "]"
            // The same list, the next page: every parameter kept but the page's own.
            let kept = request.uri.queryParameters.filter { $0.key != "page" && $0.key != "cursor" }
                .map { "\($0.key)=\($0.value)" }.joined(separator: "&")
            let nextPage = start / perPage + 2
            let nextPath = "/pages/\(total)?\(kept)\(kept.isEmpty ? "" : "&")page=\(nextPage)"
            var headers: HTTPFields = [.contentType: "application/json"]
            switch style {
            case "next":
                body += ",\"links\":{\"next\":" + (isLast ? "null" : "\"\(nextPath)\"") + "}"
            case "cursor":
                body += ",\"next_cursor\":" + (isLast ? "null" : "\"c\(end)\"")
            case "link":
                if !isLast {
                    let host = request.head.authority ?? "127.0.0.1"
                    headers[HTTPField.Name("Link")!] =
                        "<http://\(host)\(nextPath)>; rel=\"next\", </pages/\(total)?\(kept)>; rel=\"first\""
                }
            default:
                break
            }
            body += ",\"total\":\(total)}"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
        }
    }
}
