import Dispatch

/// A completion-block API in the style of the seeds' AFNetworking wrapper
/// (`testRequestWithUrl:parameters:completed:`): it answers later, on a global queue.
///
/// It is the kind of code `withCallback` bridges; it knows nothing about Swift concurrency.
struct LegacyImageAPI: Sendable {
    let stage: Stage

    /// `GET /album`: the list of images, as `(images, error)` like the seeds' `completed` block.
    func getAlbum(completed: @escaping @Sendable ([SimulatedImage]?, (any Error)?) -> Void) {
        after(400) { completed(SimulatedImage.all, nil) }
    }

    /// `GET /image/n` with separate success and failure blocks.
    func getImage(
        _ image: SimulatedImage,
        success: @escaping @Sendable (SimulatedImage) -> Void,
        failure: @escaping @Sendable (any Error) -> Void
    ) {
        after(image.latency) { success(image) }
    }

    /// The same request through a buggy code path: on a cache hit it returns early and calls
    /// neither block — the `dispatch_group_leave` that never comes. Both blocks are released
    /// when the queued work ends.
    func getImageForgettingToCallBack(
        _ image: SimulatedImage,
        success: @escaping @Sendable (SimulatedImage) -> Void,
        failure: @escaping @Sendable (any Error) -> Void
    ) {
        after(image.latency) {
            // Bug: the cache-hit path returns here without calling `success` or `failure`.
            withExtendedLifetime((success, failure)) {}
        }
    }

    /// Runs `work` on a global queue after a nominal delay, scaled like everything else.
    private func after(_ nominalMilliseconds: Int, _ work: @escaping @Sendable () -> Void) {
        let delay = stage.scaled(nominalMilliseconds)
        let nanoseconds = Int(delay.inMilliseconds * 1_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanoseconds), execute: work)
    }
}
