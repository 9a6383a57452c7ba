// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Orchestra",
    platforms: [
        .macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9),
    ],
    products: [
        .library(name: "Orchestra", targets: ["Orchestra"]),
        .library(name: "OrchestraOperations", targets: ["OrchestraOperations"]),
        .library(name: "OrchestraHTTP", targets: ["OrchestraHTTP"]),
        .library(name: "OrchestraTestKit", targets: ["OrchestraTestKit"]),
        .executable(name: "orchestra", targets: ["OrchestraCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .target(
            name: "Orchestra",
            dependencies: [
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
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
        .target(
            name: "OrchestraTestKit",
            dependencies: [
                "Orchestra",
                "OrchestraHTTP",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // Not named "orchestra": on a case-insensitive file system (macOS's default) its build
        // products would collide with the "Orchestra" module's. The product keeps the name.
        .executableTarget(
            name: "OrchestraCLI",
            dependencies: [
                "Orchestra",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(
            name: "OrchestraTests",
            dependencies: ["Orchestra", "OrchestraTestKit"]
        ),
        .testTarget(
            name: "OrchestraOperationsTests",
            dependencies: ["OrchestraOperations", "OrchestraTestKit"]
        ),
        .testTarget(
            name: "OrchestraHTTPTests",
            dependencies: ["OrchestraHTTP", "OrchestraTestKit"]
        ),
        .testTarget(
            name: "OrchestraTestKitTests",
            dependencies: ["OrchestraTestKit"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
