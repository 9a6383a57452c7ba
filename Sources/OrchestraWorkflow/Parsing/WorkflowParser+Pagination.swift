import Yams

extension WorkflowParser {
    /// `paginate:`: `next:` (a URL in the page, or `{ header: Link }`) or `cursor:` (or
    /// neither: numbered pages), `items:` (a path to each page's list) and `max_pages:`.
    mutating func pagination(_ node: Node, step: String) -> Pagination? {
        guard
            let entries = reader.entries(
                node, allowed: ["next", "cursor", "items", "max_pages"], step: step, field: "paginate",
                hint: " (next: $.links.next, { header: Link }, or cursor: $.next_cursor; items: $.data)")
        else { return nil }
        var pagination = Pagination(next: .number)
        pagination.location = NodeReader.location(node)
        var ways: [String] = []
        var readable = true
        for (key, value) in entries {
            let field = "paginate.\(key)"
            switch key {
            case "next", "cursor":
                ways.append(key)
                guard let source = captureSource(value, step: step, field: field) else {
                    readable = false
                    continue
                }
                pagination.next = key == "next" ? .url(source) : .cursor(source)
            case "items":
                guard let text = reader.string(value, step: step, field: field) else {
                    readable = false
                    continue
                }
                do {
                    pagination.items = try CapturePath(parsing: text)
                } catch {
                    reader.fail(
                        .invalidCapturePath, error.message + " (items: $.PATH to the list of each page)", at: value,
                        step: step, field: field)
                    readable = false
                }
            default:
                guard
                    let pages = reader.integer(value, minimum: 1, step: step, field: field, what: "a number of pages")
                else {
                    readable = false
                    continue
                }
                guard pages <= Pagination.maximumMaxPages else {
                    reader.fail(
                        .invalidValue, "must be at most \(Pagination.maximumMaxPages), got \(pages)", at: value,
                        step: step, field: field)
                    readable = false
                    continue
                }
                pagination.maxPages = pages
            }
        }
        if ways.count > 1 {
            reader.fail(
                .invalidValue,
                "give next: (the next page's URL) or cursor: (a value for {{page.cursor}}), not both", at: node,
                step: step, field: "paginate")
            return nil
        }
        return readable ? pagination : nil
    }
}
