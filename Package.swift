// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Orchestra",
    platforms: [
        // Hummingbird (the demo server only) needs macOS 14 / iOS 17; the libraries target the
        // same, well below the macOS 15 / iOS 18 the project aims at.
        .macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10),
    ],
    products: [
        .library(name: "Orchestra", targets: ["Orchestra"]),
        .library(name: "OrchestraOperations", targets: ["OrchestraOperations"]),
        .library(name: "OrchestraHTTP", targets: ["OrchestraHTTP"]),
        .library(name: "OrchestraAsyncHTTPClient", targets: ["OrchestraAsyncHTTPClient"]),
        .library(name: "OrchestraDurable", targets: ["OrchestraDurable"]),
        .library(name: "OrchestraPostgres", targets: ["OrchestraPostgres"]),
        .library(name: "OrchestraDurableHTTP", targets: ["OrchestraDurableHTTP"]),
        .library(name: "OrchestraTestKit", targets: ["OrchestraTestKit"]),
        .library(name: "OrchestraDemoServer", targets: ["OrchestraDemoServer"]),
        .executable(name: "orchestra", targets: ["OrchestraCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        // The semaphore's uncontended path: one atomic counter, no lock (already resolved through
        // SwiftNIO; small and Foundation-free, so the core stays light).
        .package(url: "https://github.com/apple/swift-atomics", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Already resolved through async-http-client: the transport turns off its no-op tracer
        // (a span per request costs even when nothing records it).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // SQLite for durable runs (OrchestraDurable): migrations, WAL, transactions; no SwiftNIO.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // PostgreSQL for durable runs shared by many processes (OrchestraPostgres only).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // SHA-256 for the workflow templates' `| sha256` filter (already resolved through
        // async-http-client and Hummingbird).
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        // Already resolved through Hummingbird; the demo server stops its service group gracefully.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Already resolved through async-http-client: the transport's TLS settings (CA files,
        // client certificates) and its decompression limit's errors.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // Test only (already resolved through async-http-client): a CA and certificates made at
        // test time for the TLS tests.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
    ],
    targets: [
        .target(
            name: "Orchestra",
            dependencies: [
                "OrchestraPrefetch",
                .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        // One C function, the processor's prefetch hint, for the task graph's hot path (Swift
        // has none); no product of its own.
        .target(name: "OrchestraPrefetch"),
        // Asynchronous Operations for OperationQueue codebases: Orchestra plus Foundation.
        .target(
            name: "OrchestraOperations",
            dependencies: ["Orchestra"]
        ),
        // Coordinated HTTP requests over a small transport protocol; URLSession by default
        // (FoundationNetworking on Linux). No SwiftNIO here: app users do not pull it in.
        .target(
            name: "OrchestraHTTP",
            dependencies: [
                "Orchestra",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
            ]
        ),
        // The AsyncHTTPClient transport, for servers: its own product, so that OrchestraHTTP
        // users on apps never pull in SwiftNIO.
        .target(
            name: "OrchestraAsyncHTTPClient",
            dependencies: [
                "OrchestraHTTP",
                // The project's one lock (the response collector), its shared timer and TimeoutError.
                "Orchestra",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // NIOConnectionError (connection refused, DNS) is NIOPosix's.
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // Durable runs of job graphs that survive a crash: a job store (SQLite through GRDB) and
        // the workers that claim its jobs. No SwiftNIO, so an app can use it.
        .target(
            name: "OrchestraDurable",
            dependencies: [
                "Orchestra",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // Durable runs in PostgreSQL, shared by workers on many machines: server-side only, so
        // SwiftNIO stays out of the app products.
        .target(
            name: "OrchestraPostgres",
            dependencies: [
                "Orchestra",
                "OrchestraDurable",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // HTTP requests as durable jobs: a coordinator's transport that hands them to workers, and
        // the workers' handler. On any store (SQLite here, PostgreSQL through OrchestraPostgres);
        // no SwiftNIO, so an app can use it.
        .target(
            name: "OrchestraDurableHTTP",
            dependencies: [
                "Orchestra", "OrchestraDurable", "OrchestraHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // A real HTTP server on 127.0.0.1 for the demo and the HTTP tests (Hummingbird, so
        // SwiftNIO). Not part of OrchestraTestKit: app test targets never pull in NIO.
        .target(
            name: "OrchestraDemoServer",
            dependencies: [
                "Orchestra",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "OrchestraTestKit",
            dependencies: [
                "Orchestra",
                "OrchestraHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // Request workflows from YAML/JSON files (`orchestra run`): parsing with line numbers,
        // validation, templates, captures and the runner. Yams stays out of the libraries. Not a
        // product: its API is `package` (the command and the tests use it).
        .target(
            name: "OrchestraWorkflow",
            dependencies: [
                "Orchestra",
                "OrchestraHTTP",
                // `--state` files: SQLite through GRDB, in the durable store's file format.
                "OrchestraDurable",
                // Names each request's durable job after its step or element (a task-local).
                "OrchestraDurableHTTP",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Not named "orchestra": on a case-insensitive file system (macOS's default) its build
        // products would collide with the "Orchestra" module's. The product keeps the name.
        .executableTarget(
            name: "OrchestraCLI",
            dependencies: [
                "Orchestra",
                "OrchestraHTTP",
                "OrchestraAsyncHTTPClient",
                "OrchestraWorkflow",
                "OrchestraDemoServer",
                "OrchestraDurable",
                "OrchestraDurableHTTP",
                "OrchestraPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // What every test target shares (not a product): a thread of its own for a test that
        // computes for seconds or awaits thousands of times in a row (`.ownThread`, on the demo
        // server's thread executor).
        .target(
            name: "TestSupport",
            dependencies: ["OrchestraDemoServer"],
            path: "Tests/TestSupport"
        ),
        // Test only: an HTTPS server with certificates made at test time, and a forward proxy.
        .target(
            name: "NetworkTestSupport",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Tests/NetworkTestSupport"
        ),
        .testTarget(
            name: "OrchestraTests",
            dependencies: ["TestSupport", "Orchestra", "OrchestraTestKit"]
        ),
        // A worker process the crash tests kill and restart (not a product).
        .executableTarget(
            name: "DurableCrashWorker",
            dependencies: ["Orchestra", "OrchestraDurable", "OrchestraPostgres"],
            path: "Tests/DurableCrashWorker"
        ),
        // The temporary stores of the durable tests (a SQLite file, a PostgreSQL schema), shared
        // by the two targets below (not a product).
        .target(
            name: "DurableStoreTestSupport",
            dependencies: [
                "OrchestraDurable", "OrchestraPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            path: "Tests/DurableStoreTestSupport"
        ),
        // The engine on every store (SQLite always, PostgreSQL when ORCHESTRA_POSTGRES_URL is set).
        .testTarget(
            name: "OrchestraDurableTests",
            dependencies: [
                "TestSupport",
                "OrchestraDurable", "OrchestraPostgres", "OrchestraTestKit", "DurableStoreTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // What only the PostgreSQL store and its worker service do; the command's PostgreSQL tests
        // (orchestra worker, run --state postgres://) are in OrchestraCLITests.
        .testTarget(
            name: "OrchestraPostgresTests",
            dependencies: [
                "TestSupport",
                "OrchestraPostgres", "OrchestraDurable", "OrchestraTestKit", "DurableStoreTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "OrchestraOperationsTests",
            dependencies: ["TestSupport", "OrchestraOperations", "OrchestraTestKit"]
        ),
        .testTarget(
            name: "OrchestraHTTPTests",
            dependencies: [
                "TestSupport", "OrchestraHTTP", "OrchestraAsyncHTTPClient", "OrchestraTestKit", "OrchestraDemoServer",
                "NetworkTestSupport",
            ]
        ),
        .testTarget(
            name: "OrchestraWorkflowTests",
            dependencies: [
                "TestSupport",
                "OrchestraWorkflow", "OrchestraTestKit", "OrchestraDemoServer", "OrchestraDurable",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // Runs the built `orchestra` executable (a dependency, so it is built first).
        .testTarget(
            name: "OrchestraCLITests",
            dependencies: [
                "TestSupport", "NetworkTestSupport",
                "OrchestraCLI", "OrchestraTestKit", "OrchestraDemoServer", "DurableCrashWorker", "OrchestraDurable",
                "OrchestraPostgres",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                // The state-file crash test reads the file's records.
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "OrchestraDurableHTTPTests",
            dependencies: [
                "TestSupport", "OrchestraDurableHTTP", "OrchestraHTTP", "OrchestraDurable", "OrchestraTestKit",
                "DurableStoreTestSupport",
            ]
        ),
        .testTarget(
            name: "OrchestraTestKitTests",
            dependencies: ["TestSupport", "OrchestraTestKit", "OrchestraDemoServer"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
