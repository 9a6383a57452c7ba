import Foundation
import Orchestra

/// A workflow's regular expression (a `regex:` capture, a `matches:` check), run on text a
/// server sent within a time bound and the calling task's cancellation.
///
/// A pattern such as `(a+)+$` backtracks exponentially on `aaaa…ab`: 40 `a`s would take days.
/// The text comes from a server, so the work it causes is bounded: the match gives up once
/// `deadline` passes and stops at once when the task is cancelled (Ctrl-C). This is the one
/// engine for a workflow's expressions: the parser checks patterns with it, so a file that
/// `validate` accepts runs with the same syntax (ICU's, as `NSRegularExpression` reads it).
///
/// Why not Swift's `Regex`: it cannot be interrupted (a cancelled task keeps matching). ICU
/// calls back every few thousand steps of a match when asked to report progress
/// (`.reportProgress`), and the callback stops the match.
///
/// ```swift
/// let regex = try BoundedRegex("id=(\\d+)")
/// let deadline = ContinuousClock.now + .seconds(3)
/// let id = try regex.firstMatch(in: body, deadline: deadline, limit: .seconds(3))?.text  // "42"
/// ```
struct BoundedRegex: Sendable {
    /// How long the regular expressions of one response may work, together, unless the step's
    /// `timeout` is shorter: 3 s.
    static let defaultTimeLimit = Duration.seconds(3)

    /// The expression could not be compiled.
    struct InvalidPattern: Error, CustomStringConvertible {
        let description: String
    }

    /// A match that gave up: the time bound passed.
    struct GaveUp: Error, CustomStringConvertible {
        let pattern: String
        let limit: Duration
        var description: String { "regex '\(short: pattern)' gave up after \(StepErrors.format(limit))" }
    }

    /// The first match of an expression.
    struct Match {
        /// The first group's text when the expression has groups (`nil` when that group took
        /// no part in the match), else the whole match's.
        let text: String?
    }

    /// Permits to run a step's regular expressions: all but one of the processor's cores (at
    /// least one). A match holds a thread of the concurrency pool while it works (up to its
    /// bound); leaving one free keeps the tasks that cancel a run (Ctrl-C) able to run, so the
    /// cancellation reaches every match at once instead of after one gives up.
    static let workers = AsyncSemaphore(value: max(1, ProcessInfo.processInfo.activeProcessorCount - 1))

    /// Called each time a match reports progress, from the matching thread: lets a test act
    /// while an expression is at work (cancel the run). `nil` outside tests.
    @TaskLocal package static var onProgress: (@Sendable () -> Void)?

    let pattern: String
    private let expression: NSRegularExpression

    /// Compiles `pattern`.
    ///
    /// - Throws: ``InvalidPattern`` saying why it is not a regular expression.
    init(_ pattern: String) throws(InvalidPattern) {
        self.pattern = pattern
        do {
            expression = try NSRegularExpression(pattern: pattern)
        } catch {
            // ICU's error says only that it failed; Swift's parser says where, for most patterns.
            let reason: String
            do {
                _ = try Regex(pattern)
                reason = "its syntax is not ICU's"
            } catch {
                reason = "\(error)"
            }
            throw InvalidPattern(description: reason)
        }
    }

    /// The first match in `text`, `nil` if nothing matches.
    ///
    /// - Parameters:
    ///   - deadline: When the match gives up, on the continuous clock (it bounds work, not a
    ///     wait, so it is measured in real time).
    ///   - limit: The bound `deadline` stands for, for the message.
    /// - Throws: ``GaveUp`` once `deadline` passes; `CancellationError` when the calling task
    ///   is cancelled (checked every few thousand steps of the match, a fraction of a
    ///   millisecond). The match runs on the calling thread: while it works, it holds one of
    ///   the concurrency pool's threads, for at most `deadline`.
    func firstMatch(
        in text: String, deadline: ContinuousClock.Instant, limit: Duration
    ) throws -> Match? {
        let clock = ContinuousClock()
        let onProgress = Self.onProgress
        var found: NSTextCheckingResult?
        var stopped: (any Error)?
        let string = text as NSString
        expression.enumerateMatches(
            in: text, options: [.reportProgress], range: NSRange(location: 0, length: string.length)
        ) { result, _, stop in
            if let result {
                found = result
                stop.pointee = true
                return
            }
            onProgress?()
            if Task.isCancelled {
                stopped = CancellationError()
                stop.pointee = true
            } else if clock.now >= deadline {
                stopped = GaveUp(pattern: pattern, limit: limit)
                stop.pointee = true
            }
        }
        if let found {
            let range = found.numberOfRanges > 1 ? found.range(at: 1) : found.range
            return Match(text: range.location == NSNotFound ? nil : string.substring(with: range))
        }
        if let stopped { throw stopped }
        // Finished without a match, or ICU stopped before the deadline (its backtrack stack is
        // full): the same answer, no match. A cancellation that came after the last progress
        // call is still a cancellation.
        try Task.checkCancellation()
        return nil
    }
}
