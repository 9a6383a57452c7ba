import ArgumentParser
import TestSupport
import Testing

@testable import OrchestraCLI

/// `orchestra run` picks one of three modes from its flags, and each mode checks its own.
@Suite("orchestra run: the mode its flags choose, and the flags each mode refuses", .takesTurns)
struct RunModeTests {
    static let url = "postgres://u:p@127.0.0.1:5432/db"

    @Test(
        "each mode is chosen by its flags",
        arguments: [
            (RunFlags(), RunMode.once(stateFile: nil)),
            (RunFlags(state: "run.state", force: true, resendUncertain: true), .once(stateFile: "run.state")),
            (RunFlags(data: "rows.csv", parallel: 4), .rows),
            (RunFlags(state: url, schema: "s", runID: "r", resendUncertain: true), .store(url: url)),
            (RunFlags(state: url, runID: "r", force: true), .store(url: url)),
        ])
    func chosen(flags: RunFlags, mode: RunMode) throws {
        #expect(try RunMode(flags) == mode)
    }

    @Test(
        "a flag of another mode is refused, naming it",
        arguments: [
            (RunFlags(parallel: 0), "--parallel must be at least 1, got 0"),
            (RunFlags(parallel: 2), "--parallel sets how many --data rows run at once: give --data"),
            (RunFlags(force: true), "--force lets --state use another workflow's state file: give --state"),
            (RunFlags(resendUncertain: true), "--resend-uncertain resumes a --state file: give --state"),
            (RunFlags(state: ""), "--state needs a file name"),
            (RunFlags(schema: "s"), "--schema and --run-id apply to --state postgres://…"),
            (RunFlags(state: "f", data: "rows.csv"), "it does not take a --data run"),
            (RunFlags(data: "rows.csv", trace: "out"), "--trace does not take a --data run"),
            (RunFlags(data: "rows.csv", cookieJar: "jar"), "--cookie-jar does not take a --data run"),
            (RunFlags(runID: "r", data: "rows.csv"), "--schema and --run-id apply to --state postgres://…"),
            (
                RunFlags(state: url, force: true),
                "--force goes on with a run opened by another version of the workflow file: give its --run-id"
            ),
            (RunFlags(state: url, data: "rows.csv"), "--state postgres://… runs the workflow once"),
            (RunFlags(state: url, parallel: 3), "--parallel sets how many --data rows run at once"),
            (RunFlags(state: url, runID: ""), "--run-id needs an id"),
            (RunFlags(state: url, resendUncertain: true), "--resend-uncertain goes on with a run: give its --run-id"),
        ])
    func refused(flags: RunFlags, message: String) {
        let error = #expect(throws: ValidationError.self) { try RunMode(flags) }
        #expect(error?.message.contains(message) == true, "\(String(describing: error?.message))")
    }
}
