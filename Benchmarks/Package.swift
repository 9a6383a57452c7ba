// swift-tools-version: 6.1
import PackageDescription

// Benchmarks for Orchestra, kept in their own package so the library itself does not depend
// on package-benchmark. Run from the repository root:
//
//     swift package --package-path Benchmarks benchmark
//     python3 Benchmarks/ratios.py          # the same run, with ratios to each baseline
//
// See BENCHMARKS.md at the repository root for what is measured and the latest figures.
let package = Package(
    name: "OrchestraBenchmarks",
    platforms: [
        .macOS(.v14)
    ],
    dependencies: [
        // Named, so that the product is found whatever the checkout's directory is called
        // (a path dependency's identity is otherwise its directory name).
        .package(name: "Orchestra", path: ".."),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Only the MallocInterposer trait, which backs the malloc metrics. The default
        // RuntimeInterposer trait would also pull in swift-runtime-interposer, not mirrored here.
        .package(url: "https://github.com/ordo-one/package-benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "OrchestraBenchmarks",
            dependencies: [
                .product(name: "Orchestra", package: "Orchestra"),
                .product(name: "OrchestraOperations", package: "Orchestra"),
                .product(name: "OrchestraHTTP", package: "Orchestra"),
                .product(name: "OrchestraAsyncHTTPClient", package: "Orchestra"),
                .product(name: "OrchestraDemoServer", package: "Orchestra"),
                .product(name: "OrchestraDurable", package: "Orchestra"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Benchmark", package: "package-benchmark"),
            ],
            path: "Benchmarks/OrchestraBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "package-benchmark")
            ]
        ),
        // Not a package-benchmark target: a plain program that Benchmarks/postgres-benchmarks.sh
        // starts as several worker processes against one PostgreSQL server
        // (BENCHMARKS.md#durable-runs-on-postgresql). Outside Benchmarks/Benchmarks/, so the benchmark plugin does not run it.
        .executableTarget(
            name: "PostgresThroughput",
            dependencies: [
                .product(name: "OrchestraDurable", package: "Orchestra"),
                .product(name: "OrchestraPostgres", package: "Orchestra"),
            ],
            path: "Tools/PostgresThroughput"
        ),
        // A store's claims and records alone, without the worker loop: before/after figures of
        // a change to the claim (BENCHMARKS.md, durable sections).
        .executableTarget(
            name: "ClaimThroughput",
            dependencies: [
                .product(name: "OrchestraDurable", package: "Orchestra"),
                .product(name: "OrchestraPostgres", package: "Orchestra"),
            ],
            path: "Tools/ClaimThroughput"
        ),
        // AsyncHTTPClient alone, as `hey` sends requests: the floor under `orchestra run`'s cost
        // per request (BENCHMARKS.md, "Per request, against hey").
        .executableTarget(
            name: "HTTPFloor",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client")
            ],
            path: "Tools/HTTPFloor"
        ),
    ],
    swiftLanguageModes: [.v6]
)
