import OrchestraHTTP

/// One step of a workflow: a request, what it needs, what it captures and what it expects.
package struct WorkflowStep: Sendable, Hashable {
    /// Unique in the workflow; letters, digits, `_` and `-`.
    package var id: String
    package var request: RequestTemplate
    /// `needs:`, as written.
    package var needs: [String]
    package var captures: [Capture]
    /// Accepted statuses; empty means any 2xx.
    package var expect: [Int]
    /// `assert:`: checks of the response, made after its status is accepted.
    package var assertions: [Assertion] = []
    /// The time limit of each attempt; 30 s by default.
    package var timeout: Duration
    package var retry: RetrySettings
    /// Whether the workflow's `auth:` signs this step's request (`auth: false` turns it off).
    package var usesAuth: Bool
    /// `follow_redirects:` of the step; `nil` follows the workflow's
    /// ``Workflow/followRedirects``.
    package var followRedirects: Bool?
    /// `cookies:` of the step: `false` neither sends nor stores cookies; `nil` follows the
    /// workflow's ``Workflow/usesCookies``.
    package var usesCookies: Bool?
    /// `compressed:` of the step: `false` asks for the body uncompressed (`Accept-Encoding:
    /// identity` unless the step sets its own) and takes it as sent, undecoded.
    package var compressed = true
    /// `save_to:`: the file the response's body is streamed to (templated; relative to the
    /// current directory), never held in memory.
    package var saveTo: Template?
    /// `max_body:`: the largest body held in memory for this step; `nil` takes the run's
    /// (`--max-body`, 64 MB by default).
    package var maxBody: Int?
    /// `resend_on_resume:` of the step; `nil` follows ``isIdempotent``. See ``resendsOnResume``.
    package var resendOnResume: Bool?
    /// `for_each: "{{STEP.CAPTURE}}"`: the captured JSON array whose elements are each sent as
    /// one request (`{{item}}` and `{{index}}` in the request); `nil` for a single request.
    package var forEach: Template.Reference?
    /// Where the `for_each` field is, for messages.
    package var forEachLocation: SourceLocation?
    /// `paginate:`: the request is sent once per page, following the next page; `nil` for a
    /// single request.
    package var paginate: Pagination?
    /// `until:`: the request is sent again until its checks hold (``StepPoll``); `nil` sends
    /// it once.
    package var until: StepPoll?
    /// `when:`: the condition under which the step runs; a false one skips it (``StepWhen``).
    package var when: StepWhen?
    /// Where the step begins.
    package var location: SourceLocation?

    /// The default of ``timeout``.
    package static let defaultTimeout: Duration = .seconds(30)
    /// The largest `timeout` a file may give: 24 h.
    package static let maximumTimeout: Duration = .seconds(24 * 3_600)

    package init(
        id: String, request: RequestTemplate, needs: [String] = [], captures: [Capture] = [], expect: [Int] = [],
        timeout: Duration = WorkflowStep.defaultTimeout, retry: RetrySettings = RetrySettings(), usesAuth: Bool = true,
        forEach: Template.Reference? = nil, location: SourceLocation? = nil
    ) {
        self.id = id
        self.request = request
        self.needs = needs
        self.captures = captures
        self.expect = expect
        self.timeout = timeout
        self.retry = retry
        self.usesAuth = usesAuth
        self.forEach = forEach
        self.location = location
    }

    /// The steps whose captures the step uses (`{{login.token}}` → `login`, its `for_each`
    /// first), in order of first use: dependencies even when `needs` does not list them.
    package var implicitNeeds: [String] {
        let references = captureReferences
        guard !references.isEmpty else { return [] }
        var seen = Set(needs)
        return references.map(\.namespace).filter { seen.insert($0).inserted }
    }

    /// Every `{{STEP.CAPTURE}}` of the step, from the fields that hold templates (``fields``):
    /// its `for_each`, then its request's.
    package var captureReferences: [Template.Reference] {
        var references: [Template.Reference] = []
        for field in Self.referenceFields {
            field(self) { if $0.isCapture, !isPageReference($0) { references.append($0) } }
        }
        return references
    }

    /// Whether `reference` is the page of this `paginate:` step (`{{page.number}}`,
    /// `{{page.cursor}}`), not a capture of a step whose id is `page`.
    package func isPageReference(_ reference: Template.Reference) -> Bool {
        paginate != nil && reference.isPage
    }

    /// ``needs`` followed by ``implicitNeeds``: every step that must succeed first.
    package var dependencies: [String] {
        let implicit = implicitNeeds
        return implicit.isEmpty ? needs : needs + implicit
    }

    /// Whether sending the step's request twice does no harm: an idempotent method (GET, HEAD,
    /// OPTIONS, PUT, DELETE, TRACE) or an `Idempotency-Key` header.
    package var isIdempotent: Bool {
        HTTPCoordinator.isIdempotent(
            method: request.method,
            hasIdempotencyKey: request.headers.contains { $0.name.lowercased() == "idempotency-key" })
    }

    /// Whether a request of this step that was in flight when an earlier run with the same
    /// `--state` stopped is sent again on resume: `resend_on_resume:` if the step says, else
    /// whether it is idempotent. Otherwise it is reported as "may have been sent", unsent.
    package var resendsOnResume: Bool { resendOnResume ?? isIdempotent }

    /// Whether `status` is what the step expects.
    package func accepts(status: Int) -> Bool {
        expect.isEmpty ? (200...299).contains(status) : expect.contains(status)
    }

    /// `200`, `200 or 201`, `2xx`.
    package var expectationText: String {
        switch expect.count {
        case 0: "2xx"
        case 1: "\(expect[0])"
        default: expect.dropLast().map(String.init).joined(separator: ", ") + " or \(expect.last!)"
        }
    }
}

/// `auth:`: how to get a token, how to refresh it, how to sign requests with it and what counts
/// as a refusal.
package struct WorkflowAuth: Sendable, Hashable {
    /// The login request (templates may use only `{{vars.…}}`).
    package var login: TokenRequest
    /// The refresh request; `nil` logs in again.
    package var refresh: TokenRequest?
    /// The header that carries the token; `Authorization` by default.
    package var header: String
    /// Put before the token in the header, with a space; `Bearer` by default, empty for none.
    package var scheme: String
    /// Statuses that mean the token was refused; `[401]` by default (empty with
    /// ``failureBodyContains`` set: any status).
    package var failureStatuses: [Int]
    /// Text whose presence in the body means the token was refused (a server that answers 200
    /// with `{"error":"token_expired"}`).
    package var failureBodyContains: String?
    package var location: SourceLocation?

    /// Whether a response with `status` and `body` means the token was refused. `body` is
    /// read only when the status matches and the rule looks at the body.
    package func isFailure(status: Int, body: @autoclosure () -> String) -> Bool {
        guard failureStatuses.isEmpty || failureStatuses.contains(status) else { return false }
        return failureBodyContains.map { body().contains($0) } ?? true
    }
}

/// A request that returns a token (the login or the refresh).
package struct TokenRequest: Sendable, Hashable {
    package var request: RequestTemplate
    /// Where the token is in the response (`$.access_token`, `{ header: X-Auth-Token }`).
    package var token: Capture.Source
    /// Where its lifetime in seconds is, if the response says (`$.expires_in`).
    package var expiresIn: Capture.Source?
    package var location: SourceLocation?
}
