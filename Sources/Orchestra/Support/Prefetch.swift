import OrchestraPrefetch

// Prefetch hints for the task graph's hot path. On a graph larger than the processor's caches,
// the memory a node's start and end touch (its closure, where its dependents are listed, the
// list itself) is cold, and each miss stalls the run under its lock (Benchmarks/History.md,
// the performance pass's fifth session). A hint
// issued one step earlier (when the node became ready, or was started) lets the processor
// fetch it while the run does other work. A hint never faults and changes no result: any
// address, a stale one included, is allowed.

extension Array {
    /// Hints the processor to fetch element `index` (any index; nothing is read).
    @inline(__always)
    func prefetch(_ index: Int) {
        withUnsafeBufferPointer { orchestra_prefetch($0.baseAddress.map { UnsafeRawPointer($0 + index) }) }
    }
}

extension TaskGraph {
    /// Hints the processor to fetch the context of `body`, the memory a call to it first
    /// reads (its retain count and its captures).
    ///
    /// A closure value is a function pointer and a context reference, in that order, in
    /// Swift's ABI; the context is read from the second word without retaining it. Were the
    /// layout ever different, the hint would go to a wrong address and do nothing.
    @inline(__always)
    static func prefetchContext(of body: @escaping Body) {
        orchestra_prefetch(unsafeBitCast(body, to: (UnsafeRawPointer?, UnsafeRawPointer?).self).1)
    }
}
