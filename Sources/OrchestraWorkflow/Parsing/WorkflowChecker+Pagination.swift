extension WorkflowStep {
    /// Whether `{{STEP.name}}` reads the items its pages gather (`paginate:` with `items:`).
    func gathersItems(named name: String) -> Bool {
        name == Pagination.itemsName && paginate?.items != nil
    }

    /// Every reference in the step's templates (captures, variables, pages…).
    var allReferences: [Template.Reference] {
        var references: [Template.Reference] = []
        for field in Self.referenceFields { field(self) { references.append($0) } }
        return references
    }
}

extension WorkflowChecker {
    /// `{{page.number}}` and `{{page.cursor}}` in a `paginate:` step (elsewhere `{{page.x}}` is
    /// a capture of a step named `page`): the cursor only when the pages give one.
    mutating func checkPageReference(_ reference: Template.Reference, at site: TemplateSite) {
        guard let id = site.step, let step = workflow.step(id) else { return }
        guard reference.name == "number" || reference.name == "cursor" else {
            reader.fail(
                .invalidTemplate,
                "\(short: reference): a page has only {{page.number}} (from 1) and {{page.cursor}}",
                at: site.location, step: site.step, field: site.field)
            return
        }
        // A step whose paginate field could not be read says so there.
        guard let pagination = step.paginate else { return }
        if reference.name == "cursor", case .cursor = pagination.next {
            return
        } else if reference.name == "cursor" {
            reader.fail(
                .invalidTemplate,
                "\(short: reference): the pages of step '\(short: id)' give no cursor (add cursor: $.PATH to its paginate)",
                at: site.location, step: site.step, field: site.field)
        }
    }

    /// What `paginate:` needs of its step: no `for_each` beside it, the page in its request
    /// when the pages are counted or given a cursor, and no capture named `items`.
    mutating func checkPagination() {
        for step in workflow.steps {
            guard let pagination = step.paginate else { continue }
            let at = pagination.location
            if step.forEach != nil {
                reader.fail(
                    .invalidValue,
                    "a step has for_each or paginate, not both: paginate one step, and for_each over its {{\(short: step.id).items}} in another",
                    at: at, step: step.id, field: "paginate")
            }
            if step.until != nil {
                reader.fail(
                    .invalidValue,
                    "a step has until or paginate, not both: every page is checked by the step's expect and assert: already",
                    at: at, step: step.id, field: "paginate")
            }
            let pages = step.allReferences.filter(step.isPageReference).map(\.name)
            switch pagination.next {
            case .cursor where !pages.contains("cursor"):
                reader.fail(
                    .invalidValue,
                    "paginate has a cursor, but the request does not say where it goes: put {{page.cursor}} in its url, query, headers or body",
                    at: at, step: step.id, field: "paginate.cursor")
            case .number where pagination.items == nil:
                reader.fail(
                    .missingField,
                    "paginate with neither next nor cursor counts pages until one has no items: give items: $.PATH (and {{page.number}} in the request), or next: / cursor:",
                    at: at, step: step.id, field: "paginate")
            case .number where !pages.contains("number"):
                reader.fail(
                    .invalidValue,
                    "paginate with neither next nor cursor counts pages: put {{page.number}} in the request's url or query (or give next: / cursor:), else every page is the first",
                    at: at, step: step.id, field: "paginate")
            default: break
            }
            if pagination.items != nil, let capture = step.captures.first(where: { $0.name == Pagination.itemsName }) {
                reader.fail(
                    .invalidValue,
                    "'items' is the pages' items ({{\(short: step.id).items}}) in a paginate step with items:; name this capture otherwise",
                    at: capture.location, step: step.id, field: "captures.items")
            }
        }
    }
}
