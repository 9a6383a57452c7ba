import Orchestra

// Three batch shapes: all at once with each result handled as it arrives
// and one final "all done", the same in input order, and one after another.

extension Scenario {
    static let outOfOrder = Scenario(
        name: "out-of-order",
        title: "8 downloads at once, each handled as it arrives (out of order), then one \"all done\"",
        summary: "8 at once, handled as they arrive, one final \"all done\"",
        replaces: "dispatch_group_enter / dispatch_group_leave per request + dispatch_group_notify",
        orchestra: "for await (index, result) in urls.completions(limit: 8, download) { show(try result.get()) }",
        limit: 8,
        usesImages: true,
        lanes: Scenario.imageLanes
    ) { stage in
        let images = stage.images
        var order: [String] = []
        for await (index, result) in images.completions(limit: 8, { try await stage.download($0) }) {
            let download = try result.get()
            order.append(images[index].name)
            stage.note(
                "\(images[index].name) arrived \(Format.ordinal(order.count)) (\(Format.bytes(download.bytes))) → handled now"
            )
        }
        stage.note("all done → one final callback, after all \(images.count)", tone: .good)
        stage.fact("handled order", order.joined(separator: " "))
        stage.fact(
            "handled as they arrived",
            order == images.map(\.name) ? "in input order this time" : "yes, out of input order")
    }

    static let ordered = Scenario(
        name: "ordered",
        title: "8 downloads at once, results handled in input order as soon as each may be",
        summary: "8 at once, handled in input order",
        replaces: "NSConditionLock: lockWhenCondition:i … unlockWithCondition:i+1",
        orchestra: "for await result in urls.orderedResults(limit: 8, download) { append(try result.get()) }",
        limit: 8,
        usesImages: true,
        lanes: Scenario.imageLanes
    ) { stage in
        let images = stage.images
        var order: [String] = []
        for await result in images.orderedResults(limit: 8, { try await stage.download($0) }) {
            let download = try result.get()
            order.append(download.image.name)
            let held = stage.now - download.finishedAt
            let detail =
                held > .milliseconds(15)
                ? "(done at \(Format.milliseconds(download.finishedAt)), held \(Format.milliseconds(held)) for the ones before it)"
                : "(done just now)"
            stage.note("handled \(download.image.name) \(detail)")
        }
        stage.note("handled all \(images.count) in input order, with no lock and no blocked thread", tone: .good)
        stage.fact("handled order", order.joined(separator: " "), holds: order == images.map(\.name))
    }

    static let serial = Scenario(
        name: "serial",
        title: "One after another: each request starts when the previous one returned",
        summary: "one after another",
        replaces: "serial queue + dispatch_semaphore_wait after each async request",
        orchestra: "let images = try await urls.concurrentMap(limit: 1) { try await download($0) }",
        limit: 1,
        usesImages: true,
        lanes: Scenario.imageLanes
    ) { stage in
        let downloads = try await stage.images.concurrentMap(limit: 1) { image in
            try await stage.download(image)
        }
        stage.note("all \(downloads.count) done, strictly one at a time → one final callback", tone: .good)
        let starts = stage.recorder.report().lanes.compactMap { $0.segments.first?.start }
        stage.fact("start order", downloads.map(\.image.name).joined(separator: " "), holds: starts == starts.sorted())
    }
}
