/// `paginate:` of a step: its request is sent once per page, following the server's next
/// page until there is none, and the pages' items form one list (`{{STEP.items}}`) that a
/// later `for_each` takes as the pages arrive.
///
/// ```yaml
/// - id: users
///   url: "{{vars.base}}/users"
///   paginate:
///     next: $.links.next          # a URL in the body (or { header: Link }: rel="next")
///     items: $.data
///     max_pages: 500
/// - id: user
///   for_each: "{{users.items}}"   # starts with page 1's items, before page 2 is fetched
///   url: "{{vars.base}}/users/{{item.id}}"
/// ```
///
/// Three ways to find the next page:
/// - ``Next/url(_:)``: `next: $.links.next` (or `{ header: NAME }`): the next page's URL,
///   relative to the page's own; `{ header: Link }` reads the `rel="next"` link. Absent, null
///   or empty on the last page.
/// - ``Next/cursor(_:)``: `cursor: $.next_cursor`: a value the request puts where it says
///   `{{page.cursor}}` (empty on the first page). Absent, null or empty on the last page.
/// - ``Next/number``: neither: the request says `{{page.number}}` (1, 2, 3…), and the first
///   page with no items is the last.
///
/// Every page is checked like a single request (`expect`, `assert:`, retries, timeout);
/// captures come from the last page.
package struct Pagination: Sendable, Hashable {
    /// How the next page is found.
    package enum Next: Sendable, Hashable {
        /// The next page's URL, read from the page; a `Link` header is read for `rel="next"`.
        case url(Capture.Source)
        /// A cursor read from the page, given to the next request as `{{page.cursor}}`.
        case cursor(Capture.Source)
        /// Pages numbered from 1 (`{{page.number}}`); the first page with no items ends.
        case number
    }

    package var next: Next
    /// `items:`: where each page's list of items is (`$.data`); `nil` when the pages are only
    /// walked (checked), not gathered.
    package var items: CapturePath?
    /// `max_pages:`: the most pages fetched; reaching it ends the pages (the report says more
    /// were left).
    package var maxPages: Int
    /// Where `paginate:` is, for messages.
    package var location: SourceLocation?

    /// The default of ``maxPages``.
    package static let defaultMaxPages = 1_000
    /// The largest ``maxPages`` a file may give.
    package static let maximumMaxPages = 10_000_000
    /// The name under which a step's pages' items are read: `{{users.items}}`.
    package static let itemsName = "items"

    package init(next: Next, items: CapturePath? = nil, maxPages: Int = Pagination.defaultMaxPages) {
        self.next = next
        self.items = items
        self.maxPages = maxPages
    }
}
