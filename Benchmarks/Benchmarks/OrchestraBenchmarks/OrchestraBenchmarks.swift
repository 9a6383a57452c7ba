import Benchmark

// The benchmark suite, registered by package-benchmark's generated `main`.
//
// Naming: "Group/what it measures". In each group the benchmark whose name ends in
// "(baseline)" is the reference that `Benchmarks/ratios.py` divides the others by.
// Runs of this suite are described, with figures, in BENCHMARKS.md at the repository root.
let benchmarks: @Sendable () -> Void = {
    registerBatchBenchmarks()
    registerSemaphoreBenchmarks()
    registerMemoryBenchmarks()
    registerTaskGraphBenchmarks()
    registerStandardTaskGraphBenchmarks()
    registerOperationsBenchmarks()
    registerHTTPBenchmarks()
    registerMallocBenchmarks()
    registerDurableBenchmarks()
    registerRateLimitBenchmarks()
}
