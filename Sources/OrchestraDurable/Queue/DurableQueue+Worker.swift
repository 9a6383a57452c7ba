import Foundation
import Orchestra

extension DurableQueue {
    /// The worker loop of ``drain(limit:)`` (`stop` is `nil`: it returns when no run is left)
    /// and of ``work(limit:until:gracePeriod:)``: performs, one at a time, what a
    /// ``WorkerStateMachine`` decides, and feeds it the results. Attempts, the store's
    /// notifications and the stop signal reach the machine from their own tasks; each wakes
    /// the loop's wait.
    func workLoop(limit: Int, stop: DurableStopSignal?, gracePeriod: Duration) async throws {
        let kinds = Set(handlers.withLock { $0.keys })
        let signal = store.workSignal
        let machine = AwaitedState(
            WorkerStateMachine(
                policy: .init(
                    limit: limit, kinds: kinds, stopsWhenIdle: stop == nil, isShared: signal.isShared,
                    pollInterval: signal.pollInterval, renewalInterval: leaseRenewalInterval,
                    gracePeriod: gracePeriod)))
        // Jobs submitted or appended through this queue, a run closed, or the store's
        // notification of another process's work.
        let wake: @Sendable () -> Void = { machine.update { $0.workSignalled() } }
        let loopID = ObjectIdentifier(machine)
        loops.withLock { $0[loopID] = wake }
        defer { loops.withLock { _ = $0.removeValue(forKey: loopID) } }
        let now = self.now
        let observation = stop?.observe {
            let date = now()
            machine.update { $0.stopRequested(at: date) }
        }
        defer { stop?.removeObserver(observation) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await signal.listenForWork(ignoring: self.worker, wake)
                } catch {
                    // Without notifications the idle wait still polls (the signal's poll interval).
                }
            }
            defer { group.cancelAll() }
            let start = now()
            var action = machine.update { $0.next(now: start) }
            while true {
                switch action {
                case .finish: return
                case .fail(let error): throw error
                case .wait(let date):
                    try await wait(for: machine, until: date)
                    let woke = now()
                    action = machine.update { $0.next(now: woke) }
                case .settle(let outcomes, let free):
                    do {
                        let claimedAt = now()
                        let claim = free.map {
                            Claim(
                                worker: worker, kinds: kinds, limit: $0, now: claimedAt,
                                leaseExpiry: claimedAt.addingTimeInterval(leaseDuration.seconds))
                        }
                        let (claimed, release) = try await settle(outcomes, thenClaim: claim)
                        // Counted running before any starts: an attempt may end before the
                        // next line, and its end must find it running.
                        let settledAt = now()
                        action = machine.update {
                            $0.settled(claimed: claimed.map(\.key), now: settledAt, nextRelease: release)
                        }
                        for job in claimed {
                            starts.claimed(job.key, attempt: job.attempt)
                            hub.emit(.started(job.key, attempt: job.attempt))
                            group.addTask {
                                let outcome = AttemptOutcome(job: job, outcome: try await self.attempt(job))
                                machine.update { $0.attemptEnded(outcome) }
                            }
                        }
                    } catch {
                        action = machine.update { $0.storeFailed(error) }
                    }
                case .lookAhead(let after):
                    do {
                        let outlook = try await store.outlook(after: after, kinds: kinds)
                        let lookedAt = now()
                        action = machine.update { $0.lookedAhead(outlook, now: lookedAt) }
                    } catch {
                        action = machine.update { $0.storeFailed(error) }
                    }
                case .renewLeases(let jobs):
                    do {
                        try await store.renewLeases(
                            of: jobs, worker: worker, until: now().addingTimeInterval(leaseDuration.seconds))
                        let renewedAt = now()
                        action = machine.update { $0.renewed(now: renewedAt) }
                    } catch {
                        action = machine.update { $0.storeFailed(error) }
                    }
                case .giveBack(let outcomes, let leases):
                    // The grace period is over: settle what ended meanwhile, give the rest back
                    // (the handlers are cancelled as the group ends).
                    try await settle(outcomes, thenClaim: nil)
                    try await store.releaseLeases(
                        of: leases, started: starts.giveBack(leases), worker: worker, now: now())
                    return
                }
            }
        }
    }

    /// Records how `outcomes` ended (and tells the subscribers), then claims as `claim` says:
    /// one call to the store. Returns the jobs claimed, and when a job held back by its
    /// resource's rate or a pause may be claimed (a store that says: ``ReleaseTimes``).
    @discardableResult
    private func settle(
        _ outcomes: [AttemptOutcome], thenClaim claim: Claim?
    ) async throws -> (claimed: [ClaimedJob], nextRelease: Date?) {
        guard !outcomes.isEmpty || claim != nil else { return ([], nil) }
        let recorded: [RecordedOutcome]
        let claimed: [ClaimedJob]
        var release: Date?
        if let store = store as? any ReleaseTimes {
            (recorded, claimed, release) = try await store.recordAndClaim(outcomes, thenClaim: claim, now: now())
        } else {
            (recorded, claimed) = try await store.record(outcomes, thenClaim: claim, now: now())
        }
        for (attempt, outcome) in zip(outcomes, recorded) { report(attempt, outcome) }
        return (claimed, release)
    }

    /// Waits until `date` on the queue's clock (if given), or until an input reaches
    /// `machine`, whichever comes first.
    ///
    /// Cancellation: throws `CancellationError`.
    private func wait(for machine: AwaitedState<WorkerStateMachine>, until date: Date?) async throws {
        // An input that came meanwhile (an attempt that ended as it started): no timer to set.
        if machine.update({ $0.takeWakeUp() }) == true { return }
        guard let date else {
            _ = await machine.wait { $0.takeWakeUp() }
            try Task.checkCancellation()
            return
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.sleep(date) }
            group.addTask { _ = await machine.wait { $0.takeWakeUp() } }
            defer { group.cancelAll() }
            try await group.next()
            // The wait for an input ends quietly when cancelled: the caller must still stop.
            try Task.checkCancellation()
        }
    }
}
