/// One hand-rolled coordination pattern, played with Orchestra against the demo server.
struct Scenario: Sendable {
    /// The name given to `--scenario`.
    let name: String
    /// What happens, in one line.
    let title: String
    /// A few words for the `--help` catalog.
    let summary: String
    /// The hand-rolled pattern this scenario replaces (`DispatchGroup`, a semaphore…).
    let replaces: String
    /// The Orchestra call that replaces it.
    let orchestra: String
    /// The most requests that may be in flight at once; the demo checks what the server saw
    /// against it.
    let limit: Int
    /// Whether it works on the eight images, so that `--url` can replace them.
    let usesImages: Bool
    /// The timeline's rows, top to bottom, given the images.
    let lanes: @Sendable ([DemoImage]) -> [LaneSpec]
    /// The scenario itself.
    let body: @Sendable (Stage) async throws -> Void

    init(
        name: String,
        title: String,
        summary: String,
        replaces: String,
        orchestra: String,
        limit: Int,
        usesImages: Bool = false,
        lanes: @escaping @Sendable ([DemoImage]) -> [LaneSpec],
        body: @escaping @Sendable (Stage) async throws -> Void
    ) {
        self.name = name
        self.title = title
        self.summary = summary
        self.replaces = replaces
        self.orchestra = orchestra
        self.limit = limit
        self.usesImages = usesImages
        self.lanes = lanes
        self.body = body
    }

    /// A lane per image.
    @Sendable static func imageLanes(_ images: [DemoImage]) -> [LaneSpec] {
        images.map { LaneSpec.download($0.name) }
    }

    /// Every scenario, in the order the demo plays them: seven everyday patterns, then what
    /// happens when things go wrong.
    static let all: [Scenario] = [
        .outOfOrder, .ordered, .serial, .limitTwo, .graph, .chain, .tokenRefresh, .failures,
    ]

    /// The scenario called `name`, or numbered `name` (1-based).
    static func named(_ name: String) -> Scenario? {
        if let number = Int(name), all.indices.contains(number - 1) { return all[number - 1] }
        return all.first { $0.name == name.lowercased() }
    }

    /// ` 1  out-of-order  8 at once, handled as they arrive, one final "all done"` lines, for
    /// `--help`.
    static var catalog: String {
        let width = all.map(\.name.count).max() ?? 0
        return all.enumerated().map { offset, scenario in
            "\(Format.right("\(offset + 1)", 2))  \(Format.left(scenario.name, width))  \(scenario.summary)"
        }.joined(separator: "\n")
    }
}
