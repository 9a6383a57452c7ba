import HTTPTypes

/// Where a field is being read: the step it belongs to (`nil` in the `auth:` block), the
/// prefix of its name in messages (`auth.login.`), and whether its templates may use only
/// `{{vars.…}}`.
struct FieldContext {
    var step: String?
    var prefix = ""
    var variablesOnly = false

    /// The field's name as messages show it: `url`, `auth.login.url`.
    func name(_ field: String) -> String { prefix + field }
}

/// One field a workflow file may give a step (or a request), in one place: its name, how its
/// node is read into the value, and the template references it holds.
///
/// The tables ``WorkflowStep/fields`` and ``RequestTemplate/fields`` are the only list of
/// fields: the parser accepts exactly their names and reads each with its reader, and a
/// step's dependencies (``WorkflowStep/captureReferences``) come from their `references`. So a
/// new field is added in one place. The parser checks, in debug builds, that every
/// `{{STEP.CAPTURE}}` it read for a step is among the step's references, so a template field
/// whose `references` were left out fails the first test that uses it instead of silently
/// creating no dependency.
struct WorkflowField<Value>: Sendable {
    /// Reads `node` into the value; `false` when the value cannot be used at all (a `url`
    /// that is not a template). Problems are recorded in the parser's reader.
    typealias Reader = @Sendable (inout WorkflowParser, Node, inout Value, FieldContext) -> Bool
    /// Calls its second argument with every template reference the field holds in the value.
    typealias References = @Sendable (Value, (Template.Reference) -> Void) -> Void

    let name: String
    let read: Reader
    /// `nil` for a field that holds no template; required, so a new field states it.
    let references: References?

    init(_ name: String, references: References?, read: @escaping Reader) {
        self.name = name
        self.references = references
        self.read = read
    }
}

extension WorkflowField where Value == RequestTemplate {
    /// The same field on a step, read into and from its ``WorkflowStep/request`` (direct
    /// property access: the checks read every step's references several times).
    var onStep: WorkflowField<WorkflowStep> {
        let read = self.read
        var references: WorkflowField<WorkflowStep>.References?
        if let onRequest = self.references {
            references = { step, body in onRequest(step.request, body) }
        }
        return WorkflowField<WorkflowStep>(
            name, references: references,
            read: { parser, node, step, context in read(&parser, node, &step.request, context) })
    }
}

/// Every reference in `template`.
private func visit(_ template: Template, _ body: (Template.Reference) -> Void) {
    for case .reference(let reference) in template.segments { body(reference) }
}

extension RequestTemplate {
    /// The request fields, shared by steps and the `auth:` block's login and refresh.
    static let fields: [WorkflowField<RequestTemplate>] = [
        WorkflowField(
            "method", references: nil,
            read: { parser, node, request, context in
                if let method = parser.method(node, field: context.name("method"), step: context.step) {
                    request.method = method
                }
                return true
            }),
        WorkflowField(
            "url", references: { request, body in visit(request.url, body) },
            read: { parser, node, request, context in
                guard
                    let url = parser.site(
                        node, step: context.step, field: context.name("url"), variablesOnly: context.variablesOnly)
                else { return false }
                request.url = url
                request.urlLocation = NodeReader.location(node)
                return true
            }),
        WorkflowField(
            "headers", references: { request, body in for header in request.headers { visit(header.value, body) } },
            read: { parser, node, request, context in
                request.headers = parser.headers(node, context: context)
                return true
            }),
        WorkflowField(
            "body",
            references: { request, body in
                switch request.body {
                case .text(let template): visit(template, body)
                case .json(let json): for template in json.templates { visit(template, body) }
                default: break  // the other body fields list their own
                }
            },
            read: { parser, node, request, context in
                guard parser.acceptsBody(request, node: node, context: context, field: "body") else { return true }
                request.body = parser.body(
                    node, step: context.step, field: context.name("body"), variablesOnly: context.variablesOnly)
                return true
            }),
        WorkflowField(
            "form",
            references: { request, body in
                if case .form(let fields) = request.body { for field in fields { visit(field.value, body) } }
            },
            read: { parser, node, request, context in
                guard parser.acceptsBody(request, node: node, context: context, field: "form") else { return true }
                request.body = parser.form(node, context: context)
                return true
            }),
        WorkflowField(
            "multipart",
            references: { request, body in
                if case .multipart(let parts) = request.body {
                    for part in parts { if let value = part.value { visit(value, body) } }
                }
            },
            read: { parser, node, request, context in
                guard parser.acceptsBody(request, node: node, context: context, field: "multipart") else {
                    return true
                }
                request.body = parser.multipart(node, context: context)
                return true
            }),
        WorkflowField(
            "body_file", references: nil,
            read: { parser, node, request, context in
                guard parser.acceptsBody(request, node: node, context: context, field: "body_file") else {
                    return true
                }
                request.body = parser.bodyFile(node, step: context.step, field: context.name("body_file")).map(
                    RequestBody.file)
                return true
            }),
        WorkflowField(
            "basic_auth",
            references: { request, body in
                guard let basic = request.basicAuth else { return }
                visit(basic.user, body)
                visit(basic.password, body)
            },
            read: { parser, node, request, context in
                request.basicAuth = parser.basicAuth(node, context: context)
                return true
            }),
    ]
}

extension WorkflowStep {
    /// Every field of a step, in the order its references are listed: `for_each` first, then
    /// the request's.
    static let fields: [WorkflowField<WorkflowStep>] =
        [
            WorkflowField("id", references: nil) { _, _, _, _ in true },  // read first, by the parser
            WorkflowField(
                "for_each", references: { step, body in step.forEach.map(body) },
                read: { parser, node, step, _ in
                    step.forEach = parser.forEach(node, step: step.id)
                    step.forEachLocation = NodeReader.location(node)
                    return true
                }),
        ] + RequestTemplate.fields.map(\.onStep) + [
            WorkflowField(
                "needs", references: nil,
                read: { parser, node, step, _ in
                    step.needs = parser.needs(node, step: step.id)
                    return true
                }),
            WorkflowField(
                "captures", references: nil,
                read: { parser, node, step, _ in
                    step.captures = parser.captures(node, step: step.id)
                    return true
                }),
            WorkflowField(
                "expect", references: nil,
                read: { parser, node, step, _ in
                    step.expect = parser.reader.list(node).compactMap {
                        parser.statusCode($0, step: step.id, field: "expect")
                    }
                    return true
                }),
            WorkflowField(
                "assert",
                references: { step, body in
                    for assertion in step.assertions { for template in assertion.templates { visit(template, body) } }
                },
                read: { parser, node, step, _ in
                    step.assertions = parser.assertions(node, step: step.id)
                    return true
                }),
            WorkflowField(
                "timeout", references: nil,
                read: { parser, node, step, _ in
                    step.timeout =
                        parser.reader.duration(
                            node, step: step.id, field: "timeout", maximum: WorkflowStep.maximumTimeout)
                        ?? step.timeout
                    return true
                }),
            WorkflowField(
                "retry", references: nil,
                read: { parser, node, step, _ in
                    step.retry = parser.retry(node, step: step.id) ?? step.retry
                    return true
                }),
            WorkflowField(
                "auth", references: nil,
                read: { parser, node, step, _ in
                    step.usesAuth = parser.reader.bool(node, step: step.id, field: "auth") ?? step.usesAuth
                    return true
                }),
            WorkflowField(
                "follow_redirects", references: nil,
                read: { parser, node, step, _ in
                    step.followRedirects = parser.reader.bool(node, step: step.id, field: "follow_redirects")
                    return true
                }),
            WorkflowField(
                "cookies", references: nil,
                read: { parser, node, step, _ in
                    step.usesCookies = parser.reader.bool(node, step: step.id, field: "cookies")
                    return true
                }),
            WorkflowField(
                "compressed", references: nil,
                read: { parser, node, step, _ in
                    step.compressed = parser.reader.bool(node, step: step.id, field: "compressed") ?? step.compressed
                    return true
                }),
            WorkflowField(
                "save_to", references: { step, body in if let path = step.saveTo { visit(path, body) } },
                read: { parser, node, step, _ in
                    step.saveTo = parser.site(node, step: step.id, field: "save_to", variablesOnly: false)
                    return true
                }),
            WorkflowField(
                "max_body", references: nil,
                read: { parser, node, step, _ in
                    guard let text = parser.reader.string(node, step: step.id, field: "max_body") else { return true }
                    if let size = ByteSize.parse(text) {
                        step.maxBody = size
                    } else {
                        parser.reader.fail(
                            .invalidValue,
                            "must be a size such as 65536, 512KB, 64MB or 1GB (up to 1TB), got '\(short: text)'",
                            at: node, step: step.id, field: "max_body")
                    }
                    return true
                }),
            WorkflowField(
                "until", references: nil,
                read: { parser, node, step, _ in
                    step.until = parser.until(node, step: step.id)
                    return true
                }),
            WorkflowField(
                "when",
                references: { step, body in
                    for template in step.when?.condition.templates ?? [] { visit(template, body) }
                },
                read: { parser, node, step, _ in
                    step.when = parser.when(node, step: step.id)
                    return true
                }),
            WorkflowField(
                "paginate", references: nil,
                read: { parser, node, step, _ in
                    step.paginate = parser.pagination(node, step: step.id)
                    return step.paginate != nil
                }),
            WorkflowField(
                "resend_on_resume", references: nil,
                read: { parser, node, step, _ in
                    step.resendOnResume = parser.reader.bool(node, step: step.id, field: "resend_on_resume")
                    return true
                }),
        ]

    /// The names of ``fields``: what the parser accepts in a step.
    static let fieldNames = fields.map(\.name)
    /// The readers of ``fields`` by name.
    static let fieldsByName = Dictionary(uniqueKeysWithValues: fields.map { ($0.name, $0) })
    /// The fields that hold templates, for ``captureReferences``.
    static let referenceFields = fields.compactMap(\.references)
}
