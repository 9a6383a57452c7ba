import OrchestraDurable

extension WorkflowLimits {
    /// A durable run's rates, one per `hosts:` entry with a rate, named as
    /// ``resourceLimits`` names them: held in the store's claims, so that every worker
    /// together keeps to them.
    package var resourceRates: [String: DurableRate] {
        Dictionary(uniqueKeysWithValues: hostRates.map { (Self.resource($0.key), DurableRate($0.value, burst: burst)) })
    }
}
