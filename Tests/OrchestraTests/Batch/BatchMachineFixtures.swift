@testable import Orchestra

/// What the tests of the batch stream's state machine share: the machine over `String` items,
/// a task to record as the workers', items, and actions described as text to compare.
protocol BatchMachineFixtures {}

extension BatchMachineFixtures {
    typealias Machine = BatchStreamStateMachine<String>

    /// Where the workers' task is recorded; never runs anything.
    func idleTask() -> Task<Void, Never> {
        // Unstructured: the machine only stores the workers' task (to hand it back for
        // cancellation); this one has nothing to do.
        Task {}
    }

    func item(_ index: Int) -> Machine.Item {
        Machine.Item(index: index, result: .success("item \(index)"))
    }

    /// "deliver item 2 at 2", "suspend" or "end".
    func describe(_ action: Machine.NextAction) -> String {
        switch action {
        case .deliver(let item, let worker):
            "deliver \((try? item.result.get()) ?? "error") at \(item.index)\(worker == nil ? "" : " and wake a worker")"
        case .end: "end"
        case .suspend: "suspend"
        }
    }

    func describe(_ action: Machine.SlotAction) -> String {
        switch action {
        case .proceed: "proceed"
        case .stop: "stop"
        case .suspend: "suspend"
        }
    }
}
