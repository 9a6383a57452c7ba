import Foundation
import Testing

/// A Chrome Trace Event file, parsed.
struct ChromeTrace {
    struct Event {
        let name: String
        let lane: Int
        let start: Double
        let duration: Double
    }

    let completeEvents: [Event]

    init(contentsOf url: URL) throws {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url))
        let root = try #require(object as? [String: Any])
        let events = try #require(root["traceEvents"] as? [[String: Any]])
        completeEvents = try events.filter { $0["ph"] as? String == "X" }.map { event in
            Event(
                name: try #require(event["name"] as? String),
                lane: try #require((event["tid"] as? NSNumber)?.intValue),
                start: try #require((event["ts"] as? NSNumber)?.doubleValue),
                duration: try #require((event["dur"] as? NSNumber)?.doubleValue)
            )
        }
    }

    /// Pairs of events of one lane that overlap in time.
    var overlapsInALane: [(String, String)] {
        Dictionary(grouping: completeEvents, by: \.lane).values.flatMap { lane -> [(String, String)] in
            let sorted = lane.sorted { $0.start < $1.start }
            return zip(sorted, sorted.dropFirst()).compactMap { earlier, later in
                later.start < earlier.start + earlier.duration ? (earlier.name, later.name) : nil
            }
        }
    }
}
