extension WorkflowChecker {
    /// `until:` beside the fields it cannot go with: `paginate:` (a poll sends one request
    /// again, a paginated step a different one per page) and `save_to:` (every attempt would
    /// write the file).
    mutating func checkPolls() {
        for step in workflow.steps {
            guard let poll = step.until else { continue }
            if step.paginate != nil {
                reader.fail(
                    .invalidValue,
                    "until: sends one request again and paginate: one per page: use one or the other on a step",
                    at: poll.location, step: step.id, field: "until")
            }
            if step.saveTo != nil {
                reader.fail(
                    .invalidValue,
                    "until: sends the request again and save_to: would write each attempt's body: save the body in a later step",
                    at: poll.location, step: step.id, field: "until")
            }
        }
    }
}
