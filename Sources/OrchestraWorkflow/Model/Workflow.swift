import Foundation
import HTTPTypes
import Orchestra
import OrchestraHTTP

/// A workflow of HTTP requests read from a YAML or JSON file: steps that depend on each other,
/// values captured from responses and used by later steps, limits, authentication and a
/// failure policy. Load one with ``load(contentsOf:variables:)``; run it with
/// ``WorkflowRunner``.
///
/// ```swift
/// let workflow = try Workflow.load(contentsOf: URL(fileURLWithPath: "login.yaml"), variables: ["base": url])
/// let report = await WorkflowRunner(workflow: workflow).run()
/// ```
///
/// Every element remembers where it was written, so that errors found later (a cycle, a bad
/// URL) can name the line.
package struct Workflow: Sendable {
    /// The file it was read from, as given (used in messages).
    package var file: String?
    /// `name:`, if given.
    package var name: String?
    /// The SHA-256 of the file's text, in hex: what `--state` checks to know a state file
    /// belongs to this workflow. Empty for a workflow not parsed from text.
    package var digest = ""
    /// `vars:` merged with the overrides given when loading.
    package var variables: [String: String]
    /// The top-level `basic_auth:`: the default of every step that has none of its own (the
    /// auth block's login and refresh give their own).
    package var basicAuth: BasicAuth?
    /// The environment variables the file's templates use (`{{env.NAME}}`), read when it was
    /// loaded; a template that names one that is not set is an error then.
    package var environment: [String: String] = [:]
    /// The values of the variables `secrets:` names, redacted in everything a run shows
    /// (``redactor``).
    package var secretValues: [String] = [] {
        didSet { redactor = Redactor(secrets: secretValues) }
    }
    /// `limit:`: requests in flight at once (a step waiting for a backoff, a token or a host
    /// slot holds none); 8 by default. What each layer of a run makes of it: ``limits``.
    package var limit: Int
    /// `hosts:`: at most this many requests at once to a host, on top of ``limit``, and at most
    /// this rate. What each layer of a run makes of both: ``limits``.
    package var hostLimits: [HostLimit]
    /// `rate:`: requests started per interval over all hosts; none by default.
    package var rate: Rate?
    /// `burst:`: starts granted at once after a quiet time, by each rate; 1 by default.
    package var burst = 1
    /// `failure:`.
    package var failurePolicy: WorkflowFailurePolicy
    /// `follow_redirects:`: whether a step follows redirects (at most
    /// ``maxRedirects`` in a row) unless it says otherwise; `true` by default.
    package var followRedirects: Bool = true
    /// The columns of the data file the workflow is run with (`--data`), when it is; a
    /// `{{data.COLUMN}}` is then checked against them, and is an error without one.
    package var dataColumns: [String]?
    /// `cookies:`: whether the run keeps a cookie jar (cookies set by responses are sent on
    /// later matching requests); `true` by default.
    package var usesCookies: Bool = true
    /// `auth:`, if given.
    package var auth: WorkflowAuth?
    /// `tls:`, if given: CA file, client certificate, verification (paths resolved).
    package var tls: WorkflowTLS?
    /// `steps:`, in file order.
    package var steps: [WorkflowStep] {
        didSet { stepIndex = Self.index(of: steps) }
    }
    /// The position of each step by id (the first, if two share one), kept with ``steps``.
    private var stepIndex: [String: Int]
    /// The variables the file's templates use (`{{vars.NAME}}`): a `--var` of any other name
    /// changes nothing.
    package internal(set) var usedVariables: Set<String> = []
    /// The data columns the file's templates use (`{{data.COLUMN}}`): every row of a `--data`
    /// run must have them.
    package internal(set) var usedDataColumns: Set<String> = []
    /// The files `include:` read, each copy (a file included twice with two prefixes is two)
    /// with the ids of its own steps, in the order read: what `orchestra graph` draws in boxes.
    package internal(set) var includedFiles: [(name: String, steps: [String])] = []

    /// The workflow with its hosts' rates left to another engine: a durable store holds them
    /// in its claims across all workers (``WorkflowLimits/resourceRates``), so the coordinator
    /// that hands the requests to the workers must not hold them a second time.
    package var leavingHostRatesToTheStore: Workflow {
        var copy = self
        copy.hostLimits = hostLimits.map { entry in
            var entry = entry
            entry.rate = nil
            return entry
        }
        return copy
    }

    /// The default of ``limit``.
    package static let defaultLimit = 8
    /// The most redirects one request follows.
    package static let maxRedirects = 10

    init(
        file: String?, name: String?, variables: [String: String], limit: Int, hostLimits: [HostLimit],
        failurePolicy: WorkflowFailurePolicy, auth: WorkflowAuth?, steps: [WorkflowStep]
    ) {
        self.file = file
        self.name = name
        self.variables = variables
        self.limit = limit
        self.hostLimits = hostLimits
        self.failurePolicy = failurePolicy
        self.auth = auth
        self.steps = steps
        self.stepIndex = Self.index(of: steps)
    }

    /// Redacts ``secretValues`` and the secrets its runs learn (the auth block's tokens, the
    /// filters' output of a secret): one instance, shared by every run of this workflow and by
    /// what shows them (`--verbose`), so that a secret learned by one is masked by all.
    package private(set) var redactor = Redactor(secrets: [])

    /// The used variable (``usedVariables``) spelt most like `name`, if one is close: for a
    /// "did you mean" hint.
    package func usedVariable(closestTo name: String) -> String? {
        NodeReader.closest(to: name, in: usedVariables.sorted())
    }

    /// The step with `id` (the first, if two share it).
    ///
    /// Complexity: O(1).
    package func step(_ id: String) -> WorkflowStep? {
        stepIndex[id].map { steps[$0] }
    }

    /// The position of the step with `id` in ``steps`` (the first, if two share it).
    func position(of id: String) -> Int? {
        stepIndex[id]
    }

    private static func index(of steps: [WorkflowStep]) -> [String: Int] {
        var index: [String: Int] = [:]
        index.reserveCapacity(steps.count)
        // By position: `for step in steps` would copy every step (a dozen references each).
        for position in steps.indices where index[steps[position].id] == nil {
            index[steps[position].id] = position
        }
        return index
    }
}

/// What a failed step does to the others.
package enum WorkflowFailurePolicy: String, Sendable, Hashable, CaseIterable {
    /// Dependents of a failed step are skipped, naming it; independent steps go on.
    case `continue`
    /// The first failure cancels the running steps and skips the rest.
    case stop
}

/// `hosts:` entry: a limit for one authority (`127.0.0.1:8080`) or one host name on any port
/// (`127.0.0.1`).
package struct HostLimit: Sendable, Hashable {
    package var host: String
    /// Requests at once to the host; `nil`: only ``Workflow/limit``.
    package var limit: Int?
    /// Requests started per interval to the host; `nil`: not limited.
    package var rate: Rate?
    package var location: SourceLocation?

    package init(host: String, limit: Int?, rate: Rate? = nil, location: SourceLocation? = nil) {
        self.host = host
        self.limit = limit
        self.rate = rate
        self.location = location
    }

    /// Whether a request to `scheme://authority` is limited by this entry: it names the
    /// request's `host:port` or its host (``HTTPHostKey``). Where entries naming both exist,
    /// the one naming `host:port` applies (``WorkflowLimits/resource(scheme:authority:)``).
    package func matches(scheme: String? = nil, authority: String) -> Bool {
        guard let key = HTTPHostKey(pattern: host) else { return false }
        let request = HTTPHostKey(scheme: scheme, authority: authority)
        return key == request || key == request.anyPort
    }
}

/// One HTTP request as written: method, URL, headers and body, all with templates.
package struct RequestTemplate: Sendable, Hashable {
    package var method: HTTPRequest.Method
    package var url: Template
    /// Header names and values, in file order.
    package var headers: [(name: String, value: Template)]
    package var body: RequestBody?
    /// Where the `url` field is, for messages.
    package var urlLocation: SourceLocation?
    /// `basic_auth:`: sent as `Authorization: Basic …` unless the headers set `Authorization`.
    package var basicAuth: BasicAuth?

    package init(
        method: HTTPRequest.Method = .get, url: Template, headers: [(name: String, value: Template)] = [],
        body: RequestBody? = nil, urlLocation: SourceLocation? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.urlLocation = urlLocation
    }

    package static func == (lhs: RequestTemplate, rhs: RequestTemplate) -> Bool {
        lhs.method == rhs.method && lhs.url == rhs.url && lhs.body == rhs.body && lhs.basicAuth == rhs.basicAuth
            && lhs.headers.map(\.name) == rhs.headers.map(\.name)
            && lhs.headers.map(\.value) == rhs.headers.map(\.value)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(url)
        hasher.combine(body)
    }
}

/// A request body: text sent as is, or JSON.
package enum RequestBody: Sendable, Hashable {
    /// `body: "…"`: the text, templates inserted as is.
    case text(Template)
    /// `body:` a mapping or a list: JSON, sent with `Content-Type: application/json` unless a
    /// header says otherwise.
    case json(JSONTemplate)
    /// `form:`: fields sent as `application/x-www-form-urlencoded`, in file order.
    case form([FormField])
    /// `multipart:`: parts sent as `multipart/form-data`, in file order.
    case multipart([MultipartPart])
    /// `body_file:`: a file's bytes, read when the request is sent.
    case file(BodyFile)

    package var templates: [Template] {
        switch self {
        case .text(let template): [template]
        case .json(let json): json.templates
        case .form(let fields): fields.map(\.value)
        case .multipart(let parts): parts.compactMap(\.value)
        case .file: []
        }
    }
}

/// A field of a `form:` body.
package struct FormField: Sendable, Hashable {
    package var name: String
    package var value: Template
}

/// A file a request sends: `body_file:` or a `multipart:` part's `file:`.
package struct BodyFile: Sendable, Hashable {
    /// As written in the workflow (for messages).
    package var path: String
    /// Resolved against the workflow file's folder.
    package var url: URL
}

/// A part of a `multipart:` body: `{ name, value }` or `{ name, file, content_type }`.
package struct MultipartPart: Sendable, Hashable {
    package var name: String
    /// The text of a field part; `nil` for a file part.
    package var value: Template?
    /// The file of a file part (its name is the part's `filename`).
    package var file: BodyFile?
    /// `content_type:`; a file part without one is typed by its extension.
    package var contentType: String?

    package init(name: String, value: Template? = nil, file: BodyFile? = nil, contentType: String? = nil) {
        self.name = name
        self.value = value
        self.file = file
        self.contentType = contentType
    }
}

/// A capture: a name and where its value is in the step's response.
package struct Capture: Sendable, Hashable {
    /// Where a captured value is read.
    package enum Source: Sendable, Hashable, CustomStringConvertible {
        /// `$.a.b[0]`: a path into the JSON body.
        case body(CapturePath)
        /// `{ header: Location }`: a response header's value, as text (several values of one
        /// header joined with `, `).
        case header(HTTPField.Name)
        /// `{ regex: "id=(\\d+)" }`: the first match of a regular expression in the body as
        /// text: its first group, or the whole match when it has none.
        case regex(String)

        package var description: String {
            switch self {
            case .body(let path): path.description
            case .header(let name): "header \(name.rawName)"
            case .regex(let pattern): "regex \(pattern)"
            }
        }
    }

    package var name: String
    package var source: Source
    package var location: SourceLocation?

    /// Whether the value is read from the JSON body (which must then parse).
    package var readsBody: Bool {
        if case .body = source { true } else { false }
    }

    package init(name: String, source: Source, location: SourceLocation? = nil) {
        self.name = name
        self.source = source
        self.location = location
    }
}

/// `retry:` of a step.
package struct RetrySettings: Sendable, Hashable {
    /// Attempts in all, the first included; 1 means no retry.
    package var attempts: Int
    /// The delay before the second attempt; it doubles after each further failure (no jitter,
    /// at most ``maximumBackoff``). A `Retry-After` from the server replaces it.
    package var backoff: Duration

    /// `max_delay`: the longest wait a server may ask for with `Retry-After`; a server that
    /// asks for more fails the step at once (`RetryPolicy.maximumServerDelay`).
    package var maxDelay: Duration

    /// The longest delay between two attempts, and so the largest `backoff` a file may give:
    /// 30 s.
    package static let maximumBackoff: Duration = .seconds(30)
    /// The default of ``maxDelay``: 30 s, like the backoff's cap.
    package static let defaultMaxDelay: Duration = .seconds(30)
    /// The largest `max_delay` a file may give: 1 h.
    package static let maximumMaxDelay: Duration = .seconds(3_600)

    package init(
        attempts: Int = 1, backoff: Duration = .milliseconds(200), maxDelay: Duration = RetrySettings.defaultMaxDelay
    ) {
        self.attempts = attempts
        self.backoff = backoff
        self.maxDelay = maxDelay
    }
}

/// `basic_auth: { user: …, password: … }`: HTTP basic authentication, sent as
/// `Authorization: Basic base64(user:password)`.
package struct BasicAuth: Sendable, Hashable {
    package var user: Template
    package var password: Template

    package init(user: Template, password: Template) {
        self.user = user
        self.password = password
    }
}
