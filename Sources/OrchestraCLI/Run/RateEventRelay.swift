import Orchestra
import OrchestraHTTP

/// Passes a run's rate events on to whoever asks for them once the run has started (the
/// durable store of a distributed run, to pause a host's jobs there too); drops them before
/// and after.
final class RateEventRelay: Sendable {
    private let target = Locked<(@Sendable (HTTPRateEvent) -> Void)?>(nil)

    /// Sends the events from now on to `target` (`nil`: to nobody).
    func forward(_ target: (@Sendable (HTTPRateEvent) -> Void)?) {
        self.target.withLock { $0 = target }
    }

    func send(_ event: HTTPRateEvent) {
        target.withLock { $0 }?(event)
    }
}
