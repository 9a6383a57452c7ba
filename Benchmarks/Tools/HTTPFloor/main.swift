// The floor under `orchestra run`'s cost per request: AsyncHTTPClient alone, with nothing of
// Orchestra, sending N GETs to one URL from C tasks that each send their share one after
// another (as `hey -n N -c C` does), each body read whole. Compared with `hey` and with
// `orchestra run` in BENCHMARKS.md ("Per request, against hey"):
//
//     swift build -c release --package-path Benchmarks --product HTTPFloor
//     Benchmarks/.build/release/HTTPFloor http://127.0.0.1:PORT/status/200 10000 32
import AsyncHTTPClient
import Foundation
import NIOCore

let arguments = CommandLine.arguments
guard arguments.count == 4, let total = Int(arguments[2]), let concurrency = Int(arguments[3]), total > 0,
    concurrency > 0
else {
    FileHandle.standardError.write(Data("usage: HTTPFloor URL REQUESTS CONCURRENCY\n".utf8))
    exit(2)
}
let url = arguments[1]

var configuration = HTTPClient.Configuration()
configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = concurrency
configuration.decompression = .disabled
let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)

/// Sends `total` GETs of `url` from `concurrency` tasks; returns how many were not 200.
func send(_ url: String, total: Int, concurrency: Int, with client: HTTPClient) async throws -> Int {
    try await withThrowingTaskGroup(of: Int.self) { group in
        for task in 0..<concurrency {
            // Each task its share, as hey's workers.
            let share = total / concurrency + (task < total % concurrency ? 1 : 0)
            group.addTask {
                var failed = 0
                for _ in 0..<share {
                    let response = try await client.execute(HTTPClientRequest(url: url), timeout: .seconds(30))
                    _ = try await response.body.collect(upTo: 1 << 20)
                    if response.status != .ok { failed += 1 }
                }
                return failed
            }
        }
        var failed = 0
        for try await count in group { failed += count }
        return failed
    }
}

let failures = try await send(url, total: total, concurrency: concurrency, with: client)
try await client.shutdown()
print("\(total) requests, \(failures) not 200")
