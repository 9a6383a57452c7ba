import OrchestraWorkflow

extension VerboseLog {
    /// `--verbose`: an attempt of an `until:` poll, as a block of one line after its exchange:
    ///
    /// ```
    /// * job · poll 2: not yet (1 of 1 assertions failed: $.status == "done": got "running"); next in 2 s
    /// * job · poll 3: the checks hold
    /// ```
    func polled(_ label: String, _ attempt: PollAttempt, next: Duration?) {
        console.write(pollLine(label, attempt, next: next))
    }

    /// The line ``polled(_:_:next:)`` writes, ending with a blank line; the reason is redacted
    /// and made safe for a terminal.
    func pollLine(_ label: String, _ attempt: PollAttempt, next: Duration?) -> String {
        let head = "* \(RunPrinter.shown(label)) · poll \(attempt.number): "
        guard let failure = attempt.failure else { return head + "the checks hold\n\n" }
        let then = next.map { "; next in \(Format.wallTime($0))" } ?? "; giving up"
        return head + "not yet (\(TerminalText.safe(redactor.redact(failure))))\(then)\n\n"
    }
}
