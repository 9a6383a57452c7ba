/// A Gantt-style picture of a finished scenario: one row per lane, time running left to right.
///
/// ```
///                0 ms                                        1213 ms   start      end
///   img-1     |██████████                                        |       0 →   301 ms  ✓
///   img-2     |···········████████████████████                   |       0 →   802 ms  ✓
///   █ running  · waiting  ▒ failed attempt
/// ```
struct Timeline {
    let report: RecorderReport
    var width = 50

    /// The most rows drawn; beyond, consecutive jobs share a row (`req-1…req-20`).
    var maxRows = 24

    /// A row of the picture: one lane, or several consecutive jobs drawn together.
    private struct Row {
        let label: String
        let lanes: [RecorderReport.Lane]
    }

    private var rows: [Row] {
        guard report.lanes.count > maxRows else {
            return report.lanes.map { Row(label: $0.spec.name, lanes: [$0]) }
        }
        let jobs = report.lanes.filter(\.spec.isDownload)
        let helpers = report.lanes.filter { !$0.spec.isDownload }
        let size = (jobs.count + 9) / 10
        let groups = stride(from: 0, to: jobs.count, by: size).map { start in
            let members = Array(jobs[start..<min(start + size, jobs.count)])
            let label =
                members.count == 1
                ? members[0].spec.name : "\(members[0].spec.name)…\(members[members.count - 1].spec.name)"
            return Row(label: label, lanes: members)
        }
        return groups + helpers.map { Row(label: $0.spec.name, lanes: [$0]) }
    }

    func render(_ console: Console) -> String {
        let rows = rows
        let labelWidth = max(rows.map(\.label.count).max() ?? 0, 5)
        let indent = "  "
        let wall = Format.milliseconds(report.wallTime)
        let axis = Format.left("0 ms", width + 2 - wall.count) + wall
        var lines = [
            indent + String(repeating: " ", count: labelWidth + 1)
                + console.paint(axis, .dim)
                + console.paint(Format.right("start", 8) + Format.right("end", 9), .dim)
        ]
        for row in rows {
            lines.append(indent + Format.left(row.label, labelWidth) + " " + render(row, console))
        }
        lines.append(indent + legend(console))
        return lines.joined(separator: "\n") + "\n"
    }

    /// `|···████   |       0 →   301 ms  ✓`
    private func render(_ row: Row, _ console: Console) -> String {
        var cells = [Cell](repeating: .empty, count: width)
        let segments = row.lanes.flatMap(\.segments)
        // Waiting first, so that work drawn over a shared column wins.
        for segment in segments where segment.kind == .waiting {
            let (first, last) = columns(segment)
            guard columnSpan(segment) >= 0.5 else { continue }
            for column in first..<last where cells[column] == .empty { cells[column] = .waiting }
        }
        for segment in segments where segment.kind != .waiting {
            let (first, last) = columns(segment)
            for column in first..<last where cells[column] != .failed {
                cells[column] = segment.kind == .failed ? .failed : .running
            }
        }
        let bar = "|" + paint(cells, console) + "|"
        guard let start = segments.map(\.start).min() else { return bar }
        let end = row.lanes.map { $0.finishedAt ?? $0.segments.last?.end ?? report.wallTime }.max() ?? report.wallTime
        let times =
            Format.right("\(Int(start.inMilliseconds.rounded()))", 8)
            + " → " + Format.right(Format.milliseconds(end), 9)
        return bar + console.paint(times, .dim) + "  " + mark(row, console)
    }

    /// One lane's outcome, or for a group `20/20 ✓`.
    private func mark(_ row: Row, _ console: Console) -> String {
        guard row.lanes.count > 1 else { return OutcomeMark.render(row.lanes[0].outcome, console: console) }
        let succeeded = row.lanes.count { $0.outcome?.succeeded == true }
        let failed = row.lanes.count { $0.outcome?.succeeded == false }
        var text = console.paint("\(succeeded)/\(row.lanes.count) ✓", .green)
        if failed > 0 { text += " " + console.paint("\(failed) ✗", .red) }
        return text
    }

    /// The columns `first..<last` a segment covers; at least one.
    private func columns(_ segment: Segment) -> (Int, Int) {
        let first = min(Int(position(segment.start).rounded(.down)), width - 1)
        let last = min(max(Int(position(segment.end ?? report.wallTime).rounded()), first + 1), width)
        return (first, last)
    }

    private func columnSpan(_ segment: Segment) -> Double {
        position(segment.end ?? report.wallTime) - position(segment.start)
    }

    private func position(_ time: Duration) -> Double {
        let wall = report.wallTime.inMilliseconds
        guard wall > 0 else { return 0 }
        return time.inMilliseconds / wall * Double(width)
    }

    private enum Cell: Equatable {
        case empty, waiting, running, failed

        var glyph: String {
            switch self {
            case .empty: " "
            case .waiting: "·"
            case .running: "█"
            case .failed: "▒"
            }
        }

        var style: Console.Style? {
            switch self {
            case .empty: nil
            case .waiting: .dim
            case .running: .cyan
            case .failed: .red
            }
        }
    }

    /// Paints runs of equal cells together, to keep the escape codes few.
    private func paint(_ cells: [Cell], _ console: Console) -> String {
        var output = ""
        var index = cells.startIndex
        while index < cells.endIndex {
            let cell = cells[index]
            var end = index
            while end < cells.endIndex, cells[end] == cell { end += 1 }
            let run = String(repeating: cell.glyph, count: end - index)
            output += cell.style.map { console.paint(run, $0) } ?? run
            index = end
        }
        return output
    }

    /// Explains the glyphs that appear in this timeline.
    private func legend(_ console: Console) -> String {
        let kinds = Set(report.lanes.flatMap { $0.segments.map(\.kind) })
        var parts = [console.paint("█", .cyan) + " running"]
        if kinds.contains(.waiting) { parts.append(console.paint("·", .dim) + " waiting") }
        if kinds.contains(.failed) { parts.append(console.paint("▒", .red) + " failed attempt") }
        return parts.joined(separator: "   ")
    }
}
