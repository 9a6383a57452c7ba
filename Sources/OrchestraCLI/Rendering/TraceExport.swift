import Foundation
import Orchestra

/// A finished run as files to look at: Chrome Trace Event JSON (Perfetto, `chrome://tracing`)
/// and a self-contained HTML timeline that needs no network.
struct TraceExport: Sendable {
    var title: String
    var spans: [TraceSpan]

    init(title: String, spans: [TraceSpan]) {
        self.title = title
        self.spans = spans
    }

    /// The lanes in the order their first span appears.
    var lanes: [String] {
        var seen = Set<String>()
        return spans.map(\.lane).filter { seen.insert($0).inserted }
    }

    /// Chrome Trace Event JSON: each lane named and numbered in order of first appearance,
    /// one complete event per span on its lane, the title as `otherData`.
    func chromeJSON() -> String {
        var trace = ChromeTraceWriter()
        var number: [String: Int] = [:]
        for (offset, lane) in lanes.enumerated() {
            number[lane] = offset + 1
            trace.nameLane(offset + 1, lane)
        }
        for span in spans {
            trace.job(
                span.name, category: span.category, lane: number[span.lane]!, start: span.start, end: span.end,
                args: span.args.map { ($0.key, .text($0.value)) }
            )
        }
        return trace.render(title: title)
    }

    /// A page with one row per lane and a bar per span, positioned in percent of the run's
    /// length; hover a bar for its details. Plain HTML and CSS: no script, no network.
    func html() -> String {
        let total = max(spans.map(\.end).max() ?? .zero, .milliseconds(1))
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(Self.escaped(title))</title>
            <style>
            \(Self.style)</style></head><body>
            <h1>\(Self.escaped(title))</h1>
            <div class="meta">\(spans.count) jobs on \(lanes.count) lanes · \(Format.milliseconds(total)) · hover a bar for details · the same run as Chrome Trace JSON opens in ui.perfetto.dev</div>
            \(timeline())
            </body></html>

            """
    }

    /// The style sheet of ``timeline()``.
    static let style = """
        body{font:13px -apple-system,system-ui,sans-serif;margin:24px;color:#222}
        h1{font-size:17px;margin:0 0 4px}.meta{color:#666;margin-bottom:14px}
        .row{display:flex;align-items:center;height:20px}.lane{width:180px;flex:none;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font-family:ui-monospace,monospace}
        .track{position:relative;flex:1;height:14px;background:#f3f3f3;border-radius:2px}
        .bar{position:absolute;top:0;height:14px;border-radius:2px;min-width:2px}.bar:hover{outline:2px solid #000}
        .bar i{position:absolute;top:0;height:14px;background:rgba(255,255,255,.72)}
        .bad{background:repeating-linear-gradient(45deg,#d33,#d33 4px,#e77 4px,#e77 8px)!important}
        .note{width:300px;flex:none;padding-left:10px;color:#b22;font-size:12px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
        .axis{position:relative;margin-left:180px;margin-right:310px;height:18px;color:#666}.axis span{position:absolute;white-space:nowrap}
        .legend span{margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
        .c0{background:#3b82c4}.c1{background:#e39b2d}.c2{background:#4ca45c}.c3{background:#8e5cc4}.c4{background:#c45c8e}.c5{background:#5cb8c4}
        """

    /// The timeline alone (an axis, a row per lane, a legend), for a page with ``style``.
    func timeline() -> String {
        let total = max(spans.map(\.end).max() ?? .zero, .milliseconds(1))
        let categories = Array(Set(spans.map(\.category))).sorted()
        var rows: [String] = []
        // Each lane's spans, gathered in one pass: filtering every span per lane was quadratic
        // (a `for_each` step has a lane per element: 40,000 elements took 28 s).
        for (lane, laneSpans) in spansByLane() {
            let bars = laneSpans.map { span in
                let left = percent(span.start, of: total)
                let width = max(percent(span.end - span.start, of: total), 0.15)
                let details =
                    ([
                        span.name,
                        "\(Format.milliseconds(span.start)) → \(Format.milliseconds(span.end)) (\(Format.milliseconds(span.end - span.start)))",
                    ]
                    + span.args.map { "\($0.key): \($0.value)" }).joined(separator: "\n")
                let colour = categories.firstIndex(of: span.category) ?? 0
                let failed = span.args.contains { $0.key == "outcome" && $0.value != "succeeded" }
                // Waits, inside the bar, in percent of the bar's own length.
                let length = span.end - span.start
                let waits =
                    length > .zero
                    ? span.waits.map { wait in
                        "<i style=\"left:\(format(percent(wait.start - span.start, of: length)))%;width:\(format(percent(wait.end - wait.start, of: length)))%\"></i>"
                    } : []
                return "<div class=\"bar c\(colour % 6)\(failed ? " bad" : "")\" "
                    + "style=\"left:\(format(left))%;width:\(format(width))%\" title=\"\(Self.escaped(details))\">\(waits.joined())</div>"
            }
            let notes = laneSpans.compactMap { span -> String? in
                guard let outcome = span.args.first(where: { $0.key == "outcome" })?.value, outcome != "succeeded"
                else { return nil }
                return span.args.first { $0.key == "detail" || $0.key == "error" }?.value ?? outcome
            }
            rows.append(
                "<div class=\"row\"><div class=\"lane\">\(Self.escaped(lane))</div><div class=\"track\">\(bars.joined())</div>"
                    + "<div class=\"note\">\(Self.escaped(notes.joined(separator: "; ")))</div></div>"
            )
        }
        let ticks = (0...4).map { index -> String in
            let time = total * (Double(index) / 4)
            let align = index == 0 ? "0" : index == 4 ? "-100%" : "-50%"
            return
                "<span style=\"left:\(index * 25)%;transform:translateX(\(align))\">\(Format.milliseconds(time))</span>"
        }
        let legend = categories.enumerated().map {
            "<span><i class=\"c\($0.offset % 6)\"></i>\(Self.escaped($0.element))</span>"
        }
        return """
            <div class="axis">\(ticks.joined())</div>
            \(rows.joined(separator: "\n"))
            <p class="legend">\(legend.joined()) <span><i class="bad"></i>failed</span> <span><i style="background:#cfdceb"></i>waiting (pale part of a bar)</span></p>
            """
    }

    /// Every lane (in the order its first span appears) with its spans, in their order.
    func spansByLane() -> [(lane: String, spans: [TraceSpan])] {
        var position: [String: Int] = [:]
        var groups: [(lane: String, spans: [TraceSpan])] = []
        for span in spans {
            if let index = position[span.lane] {
                groups[index].spans.append(span)
            } else {
                position[span.lane] = groups.count
                groups.append((span.lane, [span]))
            }
        }
        return groups
    }

    /// Checks a `--trace DIR` before anything runs, creating the folder if it does not exist,
    /// so a bad path is refused up front instead of after the run. Returns the problem, if any.
    static func prepareDirectory(_ path: String) -> String? {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { return "'\(TerminalText.quoted(path))' is a file, not a folder" }
            return FileManager.default.isWritableFile(atPath: path)
                ? nil : "cannot write into '\(TerminalText.quoted(path))'"
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            return nil
        } catch {
            return "cannot create the folder '\(TerminalText.quoted(path))': \(Format.error(error))"
        }
    }

    /// Checks, before anything runs, that nothing is in the way of the files
    /// ``write(to:baseName:)`` writes for each of `baseNames` into `directory`: a folder with
    /// the name of one of them is refused, naming it. Returns the problem, if any.
    static func problem(writing baseNames: [String], into directory: String) -> String? {
        for name in baseNames.flatMap(fileNames) {
            let path = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
                return
                    "cannot write the trace file '\(TerminalText.quoted(path))': it is a folder; remove it or choose another --trace folder"
            }
        }
        return nil
    }

    /// The files ``write(to:baseName:)`` writes: `baseName.trace.json` and `baseName.html`.
    static func fileNames(baseName: String) -> [String] {
        ["\(baseName).trace.json", "\(baseName).html"]
    }

    /// Creates `directory` if needed and writes `baseName.trace.json` and `baseName.html`, each
    /// with ``OutputFile`` (a new file renamed into place: a symlink planted there is replaced,
    /// never followed).
    @discardableResult
    func write(to directory: URL, baseName: String) throws -> [URL] {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let names = Self.fileNames(baseName: baseName)
        let json = directory.appendingPathComponent(names[0])
        let page = directory.appendingPathComponent(names[1])
        try OutputFile.write(chromeJSON(), to: json.path)
        try OutputFile.write(html(), to: page.path)
        return [json, page]
    }

    private func percent(_ part: Duration, of whole: Duration) -> Double {
        part / whole * 100
    }

    private func format(_ value: Double) -> String {
        String(format: "%.3f", value)
    }

    static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "\n": result += "&#10;"
            default: result.append(character)
            }
        }
        return result
    }
}
