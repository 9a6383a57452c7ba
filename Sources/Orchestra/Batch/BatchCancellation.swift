/// What a batch stream does when the task consuming it is cancelled: end at once, or deliver
/// the outcomes of the elements that were running first.
///
/// ```swift
/// var received = 0
/// for await (index, result) in ids.completions(limit: 8, whenCancelled: .deliverRunning, { try await send($0) }) {
///     record(index, result)              // after a cancellation: the running elements' outcomes
///     received += 1
/// }
/// let neverStarted = ids.count - received // every element that started was received
/// ```
///
/// Either way, cancelling the consumer cancels the running elements and starts no new one;
/// leaving the loop early or dropping the iterator always ends the stream at once.
public struct BatchCancellation: Sendable, Hashable {
    @usableFromInline
    enum Kind: Sendable, Hashable {
        case endAtOnce
        case deliverRunning
    }

    @usableFromInline let kind: Kind

    @inlinable
    init(_ kind: Kind) {
        self.kind = kind
    }

    /// The stream ends at once: the loop receives nothing more, not even outcomes that were
    /// ready, and does not wait for the running elements (an element that ignores
    /// cancellation runs on in the background; its outcome is dropped). The default.
    public static let endAtOnce = BatchCancellation(.endAtOnce)

    /// The running elements are cancelled and the loop receives their outcomes (usually
    /// `CancellationError`), and any that were ready, before the stream ends; it ends once
    /// every element that started has ended. Every element that started is received, so the
    /// ones that never started are the input's count minus those received. For a loop that
    /// must account for every element it started, and that owns no work once it ends. The
    /// loop waits for an element that ignores cancellation.
    public static let deliverRunning = BatchCancellation(.deliverRunning)
}
