extension Workflow {
    /// The label lines of a step's `when:` and `until:`: `when "{{login.role}} == 'admin'"`,
    /// `until ok: every 1 s, at most 20 attempts` (shortened: a label is one diagram box).
    static func conditionLines(_ step: WorkflowStep) -> [String] {
        var lines: [String] = []
        if let when = step.when { lines.append("when \(MessageValue.shortened(when.source, limit: 60))") }
        if let until = step.until { lines.append("until ok: \(until.summary)") }
        return lines
    }
}
