import Foundation
import Orchestra
import OrchestraDemoServer

// "Request B needs A's response" (an async NSOperation per request, then
// addDependency, or B nested inside A's completion block): with async/await it is two lines.

/// `GET /album`'s answer.
private struct Album: Decodable {
    struct Image: Decodable {
        let path: String
        let bytes: Int
    }

    let title: String
    let images: [Image]
}

extension Scenario {
    static let chain = Scenario(
        name: "chain",
        title: "Request B built from request A's response: the album, then the images it lists",
        summary: "B built from A's response",
        replaces: "B nested in A's completion block, or async NSOperation B.addDependency(A) + a shared variable",
        orchestra: """
            let album = try await get("/album")                          // A
            let images = try await album.images.concurrentMap(limit: 4) { try await get($0.path) }   // B
            """,
        limit: 4,
        lanes: { _ in [.download("A /album")] + (1...8).map { .download("B img-\($0)") } },
        body: { stage in
            let album = try await stage.perform(stage.lane(named: "A /album")) {
                try await JSONDecoder().decode(Album.self, from: stage.get(stage.url("album", latency: 250)).body)
            }
            stage.note("A returned '\(album.title)': \(album.images.count) image paths → B requests them, 4 at a time")

            let nominal = DemoServer.images.map { Int($0.latency.inMilliseconds) }
            let sizes = try await album.images.enumerated().map { $0 }.concurrentMap(limit: 4) { index, image in
                try await stage.perform(stage.lane(named: "B img-\(index + 1)")) {
                    let latency = nominal.indices.contains(index) ? nominal[index] : 200
                    let url = stage.url(String(image.path.drop { $0 == "/" }), latency: latency)
                    return try await stage.get(url).body.count
                }
            }
            let expected = album.images.map(\.bytes)
            stage.note(
                "B done: \(Format.bytes(sizes.reduce(0, +))) in \(sizes.count) images, each built from A's answer",
                tone: .good)
            stage.fact(
                "B sizes match what A announced", sizes == expected ? "yes" : "no: \(sizes) vs \(expected)",
                holds: sizes == expected)
            let report = stage.recorder.report()
            let aEnd = report.lanes.first?.finishedAt ?? .zero
            let bStart = report.lanes.dropFirst().compactMap { $0.segments.first?.start }.min() ?? .zero
            stage.fact("every B started after A returned", bStart >= aEnd ? "yes" : "no", holds: bStart >= aEnd)
        })
}
