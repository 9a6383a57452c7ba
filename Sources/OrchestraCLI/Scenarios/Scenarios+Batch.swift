import Orchestra

// The seed articles' three batch shapes: all at once with one final callback, each result
// as it arrives or in order, and one after another.

extension Scenario {
    static let allAtOnce = Scenario(
        name: "all-at-once",
        title: "8 downloads at once, one callback when all are done",
        summary: "8 at once, one callback when all are done",
        replaces: "dispatch_group_enter / dispatch_group_leave per request + dispatch_group_notify",
        orchestra: "let images = try await urls.concurrentMap(limit: 8) { try await download($0) }",
        limit: 8
    ) { stage in
        let downloads = try await SimulatedImage.all.concurrentMap(limit: 8) { image in
            try await stage.download(image)
        }
        // concurrentMap returns once, when every download is done: the `notify` block.
        let names = downloads.map(\.image.name).joined(separator: " ")
        stage.note("all done → one final callback with \(downloads.count) images, in input order: \(names)", tone: .good)
    }

    static let completions = Scenario(
        name: "completions",
        title: "8 at once, each handled as it arrives (out of order), then one final callback",
        summary: "8 at once, each handled as it arrives",
        replaces: "dispatch_group + a completion block per request (同时发起请求, 乱序返回)",
        orchestra: "for await (index, result) in urls.completions(limit: 8, download) { show(result) }",
        limit: 8
    ) { stage in
        let images = SimulatedImage.all
        let arrivals = images.completions(limit: 8) { image in
            try await stage.download(image)
        }
        var order: [String] = []
        for await (index, result) in arrivals {
            _ = try result.get()
            order.append(images[index].name)
            stage.note("\(images[index].name) arrived \(Format.ordinal(order.count)) → handled now")
        }
        stage.note("arrival order: \(order.joined(separator: " ")) → one final callback", tone: .good)
    }

    static let ordered = Scenario(
        name: "ordered",
        title: "8 at once, results handled in input order as soon as each may be",
        summary: "8 at once, handled in input order",
        replaces: "NSConditionLock: lockWhenCondition:i … unlockWithCondition:i+1 (有序返回)",
        orchestra: "for await result in urls.orderedResults(limit: 8, download) { append(try result.get()) }",
        limit: 8
    ) { stage in
        let results = SimulatedImage.all.orderedResults(limit: 8) { image in
            try await stage.download(image)
        }
        for await result in results {
            let download = try result.get()
            let held = stage.now - download.finishedAt
            let detail = held > stage.scaled(30)
                ? "(done at \(Format.milliseconds(download.finishedAt)), held \(Format.milliseconds(held)) for the ones before it)"
                : "(done just now)"
            stage.note("handled \(download.image.name) \(detail)")
        }
        stage.note("handled img-1 … img-8 in order, with no lock and no blocked thread", tone: .good)
    }

    static let serial = Scenario(
        name: "serial",
        title: "One after another: each request starts when the previous one returned",
        summary: "one after another",
        replaces: "serial queue + dispatch_semaphore_wait after each async request (逐一发起请求)",
        orchestra: "let images = try await urls.concurrentMap(limit: 1) { try await download($0) }",
        limit: 1
    ) { stage in
        let downloads = try await SimulatedImage.all.concurrentMap(limit: 1) { image in
            try await stage.download(image)
        }
        stage.note("all \(downloads.count) done, strictly one at a time → one final callback", tone: .good)
    }
}
