import Orchestra

// The seeds' "request B only after A's response" (async NSOperation + addDependency), over a
// completion-block API bridged with withCallback; plus the two ways such code hangs or stalls:
// a completion that is never called, and a request that takes too long.

extension Scenario {
    static let dependencies = Scenario(
        name: "dependencies",
        title: "B after A returned, over a callback API: one call never calls back, one is too slow",
        summary: "B after A; callback bridge; lost callback; timeout",
        replaces: "async NSOperation (isFinished KVO) + addDependency; a timeout NSTimer; a leave that never comes",
        orchestra: """
            let album = try await withCallback { completion in api.getAlbum { completion.resume(…) } }
            let image = try await withTimeout(.milliseconds(800)) { try await download(url) }
            """,
        limit: 8,
        lanes: [.helper("A album")] + Scenario.imageLanes
    ) { stage in
        let api = LegacyImageAPI(stage: stage)

        // A: the album, through the callback API.
        let albumLane = stage.lane(named: "A album")
        let album: [SimulatedImage] = try await stage.perform(albumLane) {
            try await withCallback { completion in
                api.getAlbum { images, error in
                    if let images {
                        completion.resume(returning: images)
                    } else {
                        completion.resume(throwing: error ?? CallbackError.abandoned)
                    }
                }
            }
        }
        stage.note("A returned \(album.count) image URLs → now B: the images, which need them")

        // B: every image; keep each outcome instead of failing fast.
        let results = await album.concurrentResults(limit: 8) { image in
            try await stage.perform(stage.lane(image)) {
                switch image.number {
                case 7:
                    // The buggy path drops its blocks: withCallback ends with
                    // CallbackError.abandoned when the last reference goes, instead of hanging.
                    try await withCallback { completion in
                        api.getImageForgettingToCallBack(
                            image,
                            success: { completion.resume(returning: $0) },
                            failure: { completion.resume(throwing: $0) }
                        )
                    }
                case 8:
                    // A download far slower than its budget: withTimeout cancels it.
                    try await withTimeout(stage.scaled(800)) {
                        try await stage.pause(image.latency * 3)
                        return image
                    }
                default:
                    try await withCallback { completion in
                        api.getImage(
                            image,
                            success: { completion.resume(returning: $0) },
                            failure: { completion.resume(throwing: $0) }
                        )
                    }
                }
            }
        }

        for (image, result) in zip(album, results) {
            guard case .failure(let error) = result else { continue }
            switch error {
            case CallbackError.abandoned:
                stage.note("\(image.name): the legacy call released its completion uncalled → \(Format.error(error)); a dispatch_group would wait forever", tone: .bad)
            case let error as TimeoutError:
                stage.note("\(image.name): \(Format.error(error)); the download was cancelled", tone: .bad)
            default:
                stage.note("\(image.name): \(Format.error(error))", tone: .bad)
            }
        }
        let succeeded = results.count { (try? $0.get()) != nil }
        stage.note("B done: \(succeeded) images, \(results.count - succeeded) failures reported, nothing hung", tone: .good)
    }
}
