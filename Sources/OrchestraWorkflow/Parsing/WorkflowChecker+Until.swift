extension WorkflowChecker {
    /// `until:` beside a field it cannot go with: `save_to:` (every attempt would write the
    /// file).
    mutating func checkPolls() {
        for step in workflow.steps {
            guard let poll = step.until else { continue }
            if step.saveTo != nil {
                reader.fail(
                    .invalidValue,
                    "until: sends the request again and save_to: would write each attempt's body: save the body in a later step",
                    at: poll.location, step: step.id, field: "until")
            }
        }
    }
}
