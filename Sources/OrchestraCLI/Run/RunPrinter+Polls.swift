import OrchestraWorkflow

extension RunPrinter {
    /// ` · 4 polls` (` · 4 polls, 6 attempts` when retries added sends) for a step with `until:`.
    static func pollNote(_ step: StepReport) -> String {
        let polls = " · \(Format.count(step.pollCount, "poll"))"
        return step.attempts > step.pollCount ? polls + ", \(step.attempts) attempts" : polls
    }

    /// `poll_count` and `polls` (the last attempts kept: `attempt`, `sent_ms`, `status`,
    /// `passed`, `failure`) of a step with `until:`.
    static func pollMembers(of step: StepReport) -> [JSONValue.Member] {
        let polls = step.polls.map { poll -> JSONValue in
            .object([
                "attempt": .integer(poll.number),
                "sent_ms": .integer(Int(poll.sent / .milliseconds(1))),
                "status": poll.status.map(JSONValue.integer) ?? .null,
                "passed": .bool(poll.passed),
                "failure": poll.failure.map(JSONValue.string) ?? .null,
            ])
        }
        return [JSONValue.Member("poll_count", .integer(step.pollCount)), JSONValue.Member("polls", .array(polls))]
    }
}

extension RunPrinter {
    /// `until: the checks still failed after 4 attempts (max_attempts: 4); last: ` before the
    /// failed checks of a poll that gave up; empty for other steps.
    static func pollPrefix(of step: StepReport) -> String {
        guard step.pollCount > 0, let error = step.error, error.hasPrefix("until: "),
            let last = error.range(of: "; last: ")
        else { return "" }
        return String(error[..<last.upperBound])
    }
}

extension RunPrinter {
    /// `3 steps succeeded`, or `2 steps succeeded, 1 skipped by when:` for a row of a `--data`
    /// run whose steps all succeeded or were skipped by a condition.
    static func succeededText(_ report: WorkflowReport) -> String {
        let skipped = report.steps.count { $0.skippedByCondition }
        guard skipped > 0 else { return "\(Format.count(report.steps.count, "step")) succeeded" }
        return "\(Format.count(report.steps.count - skipped, "step")) succeeded, \(skipped) skipped by when:"
    }
}
