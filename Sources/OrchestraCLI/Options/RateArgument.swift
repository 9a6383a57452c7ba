import ArgumentParser
import Orchestra
import OrchestraWorkflow

/// `--rate 50/s`: requests started per interval over all hosts (``RateText``).
struct RateArgument: ExpressibleByArgument, Sendable {
    var rate: Rate

    init?(argument: String) {
        guard case .success(let rate) = RateText.parse(argument) else { return nil }
        self.rate = rate
    }
}
