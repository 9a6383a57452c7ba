/// The jobs a queue's workers are running, whose leases it renews; and a wait for there to be
/// one, so the renewal sleeps on the clock only while a lease is held.
final class HeldLeases: Sendable {
    private let held = AwaitedState(Set<JobKey>())

    /// The jobs held now.
    var keys: [JobKey] { held.read { Array($0) } }

    func insert(_ key: JobKey) {
        held.update { _ = $0.insert(key) }
    }

    func remove(_ key: JobKey) {
        held.update { _ = $0.remove(key) }
    }

    /// Returns once a job is held (at once if one is), or when the task is cancelled.
    func waitForOne() async {
        _ = await held.wait { $0.isEmpty ? nil : true }
    }
}
