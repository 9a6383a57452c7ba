/// `[████████░░░░░░░░] 4/8`
struct ProgressBar {
    let done: Int
    let total: Int
    var cells = 16

    /// The bar, and its width on screen (escape codes excluded).
    func render(_ console: Console) -> (text: String, width: Int) {
        let filled = total == 0 ? cells : done * cells / total
        let counter = "\(done)/\(total)"
        let text =
            "["
            + console.paint(String(repeating: "█", count: filled), .green)
            + console.paint(String(repeating: "░", count: cells - filled), .dim)
            + "] " + counter
        return (text, cells + 3 + counter.count)
    }
}
