import Foundation
import OrchestraDurable
import PostgresNIO

/// One step of a workflow as a run's coordinator judged it, kept in the run for
/// `orchestra status`: the store's jobs say whether a request got a response, only the
/// coordinator whether the step's expectations held (a refused connection is a job that
/// succeeded, with the failure in its output).
public struct DurableStepFigures: Sendable, Hashable {
    /// The step's id in the workflow file.
    public var step: String
    /// Whether it sends one request per element of a list (`for_each`).
    public var forEach: Bool
    /// For a `for_each` step whose list was read: its length.
    public var total: Int?
    /// Its requests that succeeded, failed, and may have been sent (in flight on a worker that
    /// stopped, and not safe to send twice).
    public var succeeded: Int
    public var failed: Int
    public var maybeSent: Int
    /// Whether a `when:` (its own or a dependency's) skipped it: it has nothing to send.
    public var skipped: Bool

    /// A step's figures; see each property.
    public init(
        step: String, forEach: Bool, total: Int?, succeeded: Int, failed: Int, maybeSent: Int, skipped: Bool = false
    ) {
        self.step = step
        self.forEach = forEach
        self.total = total
        self.succeeded = succeeded
        self.failed = failed
        self.maybeSent = maybeSent
        self.skipped = skipped
    }
}

extension PostgresJobStore {
    /// Replaces run `runID`'s step figures by `steps`, in file order: the figures of the
    /// coordinator that works on the run now, which reads back what an earlier one stored, so
    /// its figures cover the whole run. One transaction; figures of a run that does not exist
    /// are dropped.
    ///
    /// Given the figures this process recorded last (`previous`, as many steps), only the
    /// steps whose figures differ are written: a workflow of 20,000 steps, written every few
    /// seconds while it runs, rewrites the few that moved, not all of them.
    public func recordSteps(
        _ steps: [DurableStepFigures], of runID: String, changedFrom previous: [DurableStepFigures]? = nil
    ) async throws {
        let replacing = previous?.count != steps.count
        let positions = steps.indices.filter { replacing || steps[$0] != previous?[$0] }
        guard replacing || !positions.isEmpty else { return }
        let rows = positions.map { steps[$0] }
        let names = rows.map(\.step)
        let forEach = rows.map(\.forEach)
        // -1: a list not read yet (NULL).
        let totals = rows.map { Int64($0.total ?? -1) }
        let succeeded = rows.map { Int64($0.succeeded) }
        let failed = rows.map { Int64($0.failed) }
        let maybeSent = rows.map { Int64($0.maybeSent) }
        let skipped = rows.map(\.skipped)
        let indices = positions.map(Int64.init)
        try await transaction { [self] connection in
            if replacing {
                try await connection.query(
                    "DELETE FROM \(unescaped: table("run_steps")) WHERE run_id = \(runID)", logger: logger)
            }
            guard !rows.isEmpty else { return }
            try await connection.query(
                """
                INSERT INTO \(unescaped: table("run_steps"))
                    (run_id, position, step, for_each, total, succeeded, failed, maybe_sent, skipped)
                SELECT \(runID), position, step, for_each, NULLIF(total, -1), succeeded, failed, maybe_sent, skipped
                FROM unnest(\(indices)::BIGINT[], \(names)::TEXT[], \(forEach)::BOOLEAN[], \(totals)::BIGINT[],
                    \(succeeded)::BIGINT[], \(failed)::BIGINT[], \(maybeSent)::BIGINT[], \(skipped)::BOOLEAN[])
                    AS s (position, step, for_each, total, succeeded, failed, maybe_sent, skipped)
                WHERE EXISTS (SELECT 1 FROM \(unescaped: table("runs")) WHERE id = \(runID))
                ON CONFLICT (run_id, position) DO UPDATE SET
                    step = EXCLUDED.step, for_each = EXCLUDED.for_each, total = EXCLUDED.total,
                    succeeded = EXCLUDED.succeeded, failed = EXCLUDED.failed, maybe_sent = EXCLUDED.maybe_sent,
                    skipped = EXCLUDED.skipped
                """, logger: logger)
        }
    }

    /// The step figures of run `runID` (``recordSteps(_:of:changedFrom:)``), in file order; none if no
    /// coordinator of the run recorded them (a run of an earlier version).
    public func steps(of runID: String) async throws -> [DurableStepFigures] {
        try await read { [self] connection in
            var steps: [DurableStepFigures] = []
            for try await (step, forEach, total, succeeded, failed, maybeSent, skipped) in try await connection.query(
                """
                SELECT step, for_each, total, succeeded, failed, maybe_sent, skipped
                FROM \(unescaped: table("run_steps")) WHERE run_id = \(runID) ORDER BY position
                """, logger: logger
            ).decode((String, Bool, Int64?, Int64, Int64, Int64, Bool).self) {
                steps.append(
                    DurableStepFigures(
                        step: step, forEach: forEach, total: total.map(Int.init), succeeded: Int(succeeded),
                        failed: Int(failed), maybeSent: Int(maybeSent), skipped: skipped))
            }
            return steps
        }
    }
}
