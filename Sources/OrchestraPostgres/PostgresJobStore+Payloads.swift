import Foundation
import OrchestraDurable
import PostgresNIO

extension PostgresJobStore {
    /// What ``forgetPayloads(ofEndedRun:)`` cleared.
    public struct ForgottenPayloads: Sendable, Equatable {
        /// The jobs whose input (and, with ``outputs``, output and error) were cleared.
        public var jobs: Int
        /// Whether outputs and errors were cleared too: the run has no job that may have been
        /// sent (`DurableJobState.uncertain`), so nothing can go on with it.
        public var outputs: Bool

        public init(jobs: Int, outputs: Bool) {
            self.jobs = jobs
            self.outputs = outputs
        }
    }

    /// Clears what the jobs of run `runID` carried once it has ended: their inputs and, when
    /// no job of the run is `DurableJobState.uncertain`, their outputs and errors too. The
    /// jobs, their states and attempts stay, and the run's record: ``runSummaries(id:limit:)``
    /// counts them as before.
    ///
    /// A job's input and output are what workers and waiting processes exchange through the
    /// store: for an HTTP job, the request as sent (its `Authorization` header, a password in
    /// its body) and the response (a login's token). While the run goes on they are needed;
    /// once it has ended, nobody reads them but a process that goes on with its uncertain jobs
    /// (`resendUncertain(runID:now:)` sends their inputs again, and the run's other outputs are
    /// read back), so those are kept until it has. Does nothing to a run still running.
    ///
    /// - Returns: What was cleared (`jobs` 0 for a run still running or unknown).
    @discardableResult
    public func forgetPayloads(ofEndedRun runID: String) async throws -> ForgottenPayloads {
        try await transaction(timeout: Self.bulkOperationTimeout) { [self] connection in
            let state = try await connection.query(
                "SELECT state FROM \(unescaped: table("runs")) WHERE id = \(runID) FOR UPDATE", logger: logger
            ).decode(String.self).onlyRow()
            guard let state, state != DurableRunState.running.rawValue else {
                return ForgottenPayloads(jobs: 0, outputs: false)
            }
            // Uncertain jobs keep theirs either way; without any, outputs and errors go too.
            let cleared = try await connection.query(
                """
                WITH uncertain AS (
                    SELECT EXISTS (SELECT 1 FROM \(unescaped: table("jobs"))
                        WHERE run_id = \(runID) AND state = 'uncertain') AS found
                ), cleared AS (
                    UPDATE \(unescaped: table("jobs")) j SET input = ''::BYTEA,
                        output = CASE WHEN u.found THEN j.output END,
                        error = CASE WHEN u.found THEN j.error END
                    FROM uncertain u
                    WHERE j.run_id = \(runID) AND j.state <> 'uncertain'
                        AND (octet_length(j.input) > 0 OR (NOT u.found AND (j.output IS NOT NULL OR j.error IS NOT NULL)))
                    RETURNING 1
                )
                SELECT (SELECT COUNT(*) FROM cleared)::INTEGER, (SELECT NOT found FROM uncertain)
                """, logger: logger
            ).decode((Int, Bool).self).onlyRow()
            return ForgottenPayloads(jobs: cleared?.0 ?? 0, outputs: cleared?.1 ?? false)
        }
    }
}
