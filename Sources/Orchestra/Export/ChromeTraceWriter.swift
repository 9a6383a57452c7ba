/// Writes Chrome Trace Event JSON (opens in Perfetto, ui.perfetto.dev, and `chrome://tracing`):
/// every trace Orchestra exports (a ``GraphResult``, a workflow run, a demo scenario) goes
/// through it.
///
/// Each job is one complete (`"X"`) event on a numbered lane (`tid`), with `ts` and `dur` in
/// microseconds from the run's start; a lane may be given a name, shown as its row title.
package struct ChromeTraceWriter: Sendable {
    /// A value shown in an event's details.
    package enum Value: Sendable, Equatable {
        /// Text, written as a JSON string.
        case text(String)
        /// A whole number, written as a JSON number.
        case number(Int)
    }

    private var metadata: [String] = []
    private var events: [(start: Duration, end: Duration, json: String)] = []

    /// An empty trace.
    package init() {}

    /// Names lane `lane` (the `tid` of its events; lanes are numbered from 1).
    package mutating func nameLane(_ lane: Int, _ name: String) {
        metadata.append(
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":\(lane),\"args\":{\"name\":\(jsonQuoted(name))}}"
        )
    }

    /// A job that ran on `lane` from `start` to `end` (offsets from the run's start); `args`
    /// are shown when it is selected, in the order given.
    package mutating func job(
        _ name: String, category: String, lane: Int, start: Duration, end: Duration,
        args: [(key: String, value: Value)] = []
    ) {
        let details = args.map { key, value in
            let json =
                switch value {
                case .text(let text): jsonQuoted(text)
                case .number(let number): "\(number)"
                }
            return "\(jsonQuoted(key)):\(json)"
        }
        let json =
            "{\"name\":\(jsonQuoted(name)),\"cat\":\(jsonQuoted(category)),\"ph\":\"X\",\"pid\":1,\"tid\":\(lane),"
            + "\"ts\":\(jsonMicroseconds(start)),\"dur\":\(jsonMicroseconds(max(end, start) - start)),"
            + "\"args\":{\(details.joined(separator: ","))}}"
        events.append((start, end, json))
    }

    /// The finished JSON, lane names first and then the jobs in order of start (then end),
    /// with `title` recorded as the trace's `otherData` when given.
    package func render(title: String? = nil) -> String {
        let jobs = events.enumerated().sorted { left, right in
            (left.element.start, left.element.end, left.offset) < (right.element.start, right.element.end, right.offset)
        }.map(\.element.json)
        let other = title.map { ",\"otherData\":{\"title\":\(jsonQuoted($0))}" } ?? ""
        return "{\"traceEvents\":[\n" + (metadata + jobs).joined(separator: ",\n") + "\n],\"displayTimeUnit\":\"ms\""
            + other + "}\n"
    }
}
