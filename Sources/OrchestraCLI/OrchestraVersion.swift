/// The version of `orchestra`, in one place: `orchestra --version` prints it, and requests that
/// `orchestra run` sends identify themselves with ``userAgent``.
enum OrchestraVersion {
    /// `0.1.0`: the first version with a number (semantic versioning; no release was tagged
    /// before it).
    static let current = "0.1.0"

    /// `orchestra/0.1.0`, the `User-Agent` of the requests `orchestra run` sends.
    static let userAgent = "orchestra/\(current)"
}
