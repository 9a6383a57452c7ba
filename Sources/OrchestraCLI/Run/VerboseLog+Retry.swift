import OrchestraHTTP

extension VerboseLog {
    /// `--verbose`: a retry's wait and why it lasts that long, as a block of one line, between
    /// the exchange that failed and the next attempt's:
    ///
    /// ```
    /// * list · 503 on attempt 1: waiting 30.0 s (the server's Retry-After), then attempt 2
    /// ```
    ///
    /// A wait the server asked for (`Retry-After`) says so; others are the step's backoff.
    func retrying(_ label: String, _ event: HTTPRetryEvent) {
        console.write(Self.retryLine(label, event))
    }

    /// The line ``retrying(_:_:)`` writes, ending with a blank line.
    static func retryLine(_ label: String, _ event: HTTPRetryEvent) -> String {
        let failure = event.response.map { "\($0.status.code)" } ?? "a failure"
        let reason = event.isRetryAfter ? "the server's Retry-After" : "backoff"
        return "* \(RunPrinter.shown(label)) · \(failure) on attempt \(event.attempt): waiting "
            + "\(Format.wallTime(event.delay)) (\(reason)), then attempt \(event.attempt + 1)\n\n"
    }
}

extension VerboseLog {
    /// `--verbose`: a change a server made to its host's pace, as a block of one line:
    ///
    /// ```
    /// * rate · pausing https://api.test:443 for 2 s (429 with Retry-After: 2)
    /// ```
    func rateChanged(_ event: HTTPRateEvent) {
        console.write(rateLine(event))
    }

    /// The line ``rateChanged(_:)`` writes, ending with a blank line; the server's words are
    /// made safe for a terminal and redacted.
    func rateLine(_ event: HTTPRateEvent) -> String {
        "* rate · \(TerminalText.safe(redactor.redact(event.description)))\n\n"
    }
}
