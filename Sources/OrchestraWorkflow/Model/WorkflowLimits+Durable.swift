import Orchestra
import OrchestraDurable
import OrchestraHTTP

extension WorkflowLimits {
    /// A durable run's rates, one per `hosts:` entry with a rate, named as
    /// ``resourceLimits`` names them: held in the store's claims, so that every worker
    /// together keeps to them.
    package var resourceRates: [String: DurableRate] {
        Dictionary(uniqueKeysWithValues: hostRates.map { (Self.resource($0.key), DurableRate($0.value, burst: burst)) })
    }

    /// `hosts` of a coordinator that left the hosts' rates to the store, each with the rate of
    /// the `hosts:` entry naming it as its configured rate (and its effective one, unless the
    /// server lowered it). A host is named `scheme://host:port` there.
    package func namingHostRates(in hosts: [HTTPHostRate]) -> [HTTPHostRate] {
        hosts.map { figures in
            guard figures.configuredRate == nil, let key = HTTPHostKey(pacedHost: figures.host),
                let rate = key.entry(in: hostRates)?.value
            else { return figures }
            var named = figures
            named.configuredRate = rate
            named.effectiveRate = Rate.slower(rate, figures.effectiveRate)
            return named
        }
    }
}
