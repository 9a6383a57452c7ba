import Foundation
import OrchestraDemoServer

/// One of the eight downloads scenarios 1–4 work on: a gallery's image URLs (some of them
/// big and slow), served by the demo server — or the user's own
/// URLs with `--url`.
struct DemoImage: Sendable, Hashable {
    /// 1-based, as the timeline shows it.
    let number: Int
    let name: String
    let url: URL

    /// The demo server's eight images, their latencies divided by `speed` (`?latency_ms=`).
    static func served(by server: DemoServer, speed: Double) -> [DemoImage] {
        DemoServer.images.enumerated().map { index, image in
            let latency = Int((image.latency.inMilliseconds / speed).rounded())
            return DemoImage(
                number: index + 1,
                name: "img-\(index + 1)",
                url: server.baseURL.appendingPathComponent("images/\(index)").appending(queryItems: [
                    URLQueryItem(name: "latency_ms", value: "\(latency)")
                ])
            )
        }
    }

    /// The user's `--url`s, named after their last path component when that is short and unique.
    static func custom(_ urls: [URL]) -> [DemoImage] {
        let names = urls.map { url -> String in
            let last = url.lastPathComponent
            return last.isEmpty || last == "/" || last.count > 16 ? (url.host ?? "url") : last
        }
        let unique = Set(names).count == names.count
        return urls.enumerated().map { index, url in
            DemoImage(number: index + 1, name: unique ? names[index] : "url-\(index + 1)", url: url)
        }
    }
}

/// A finished download.
struct Download: Sendable {
    let image: DemoImage
    let bytes: Int
    /// When it finished, since the scenario started.
    let finishedAt: Duration
}
