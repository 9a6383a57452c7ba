import ArgumentParser
import Foundation
import OrchestraWorkflow

/// The files `orchestra run` writes (`--report-junit`, `--report-html`, `--cookie-jar`,
/// `--trace`) and its standard output: every path is checked before the first request, every
/// file is written by ``OutputFile`` (a new file renamed into place), each independently of
/// the others, and every failure is said.
extension RunCommand {
    /// Checks every output path the options name before anything is sent: the `--trace`
    /// folder (created if missing) and its two files, the reports and the cookie jar.
    ///
    /// - Throws: `ExitCode(2)` after naming each option, path and problem
    ///   (`--report-html '/nope/x.html': cannot write: the folder '/nope' does not exist`).
    func checkOutputPaths() throws {
        var problems: [String] = []
        for (option, path) in [
            ("--report-junit", reportJUnit), ("--report-html", reportHTML), ("--cookie-jar", cookieJarPath),
        ] {
            guard let path, let problem = OutputFile.problem(writing: path) else { continue }
            problems.append("\(option) '\(TerminalText.quoted(path))': cannot write: \(problem)")
        }
        if let trace {
            let base = RunTrace.baseName(of: options.file)
            if let problem = TraceExport.prepareDirectory(trace)
                ?? TraceExport.problem(writing: [base], into: trace)
            {
                problems.append("--trace: \(problem)")
            } else {
                for name in TraceExport.fileNames(baseName: base) {
                    let path = trace.hasSuffix("/") ? trace + name : trace + "/" + name
                    guard let problem = OutputFile.problem(writing: path) else { continue }
                    problems.append("--trace '\(TerminalText.quoted(path))': cannot write: \(problem)")
                }
            }
        }
        for problem in problems { Console.standardError.line("orchestra run: error: \(problem)") }
        if !problems.isEmpty { throw ExitCode(2) }
    }

    /// The jar `--cookie-jar` names, with the cookies of its file if there is one; `nil`
    /// without the option. The file is read as every input file is (at most 256 MB), and
    /// under the jar's limits (``CookieJar/load(netscape:)``).
    ///
    /// - Throws: `ExitCode(2)` after saying what is wrong with the file.
    func loadCookieJar() throws -> CookieJar? {
        guard let cookieJarPath else { return nil }
        let jar = CookieJar()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: cookieJarPath, isDirectory: &isDirectory) else { return jar }
        func refuse(_ problem: String) -> ExitCode {
            Console.standardError.line(
                "orchestra run: error: --cookie-jar: \(TerminalText.quoted(cookieJarPath)): \(problem)")
            return ExitCode(2)
        }
        guard !isDirectory.boolValue else { throw refuse("is a directory, not a cookie file") }
        let data: Data
        do {
            data = try Workflow.readInputFile(at: cookieJarPath, file: cookieJarPath, kind: "cookie file")
        } catch {
            throw refuse(TerminalText.safe(error.errors.first?.message ?? "cannot be read"))
        }
        guard let text = String(validating: data, as: UTF8.self) else { throw refuse("is not UTF-8 text") }
        do {
            try jar.load(netscape: text)
        } catch {
            throw refuse(TerminalText.safe(error.description))
        }
        return jar
    }

    /// Writes the cookie jar (mode 0600 when new), the trace and the reports, each whether or
    /// not another could be written, saying on standard error each one that could not.
    ///
    /// - Returns: Whether every file was written.
    func writeFiles(
        cookieJar: CookieJar?, trace report: WorkflowReport?, workflow: Workflow, reports suites: [RunReports.Suite],
        duration: Duration, notes console: Console
    ) -> Bool {
        var written = true
        func failed(_ option: String, _ error: any Error) {
            let message =
                (error as? OutputFile.Failure).map {
                    "\(option) '\(TerminalText.quoted($0.path))': cannot write: \($0.reason)"
                }
                ?? "\(option): \(Format.error(error))"
            Console.standardError.line("orchestra run: error: \(message)")
            written = false
        }
        if let cookieJar, let cookieJarPath {
            do {
                try OutputFile.write(cookieJar.netscapeText(), to: cookieJarPath, newFileMode: 0o600)
            } catch {
                failed("--cookie-jar", error)
            }
        }
        if let trace, let report {
            do {
                let files = try RunTrace.write(report, workflow: workflow, file: options.file, to: trace)
                // With --output json, stdout holds only the document.
                (output == .text ? console : Console.standardError).line(
                    "trace: " + files.map(\.path).joined(separator: ", "))
            } catch {
                failed("--trace", error)
            }
        }
        let reports = RunReports(
            title: workflow.name ?? RunTrace.baseName(of: options.file), file: options.file, suites: suites)
        for (option, path, content) in [
            ("--report-junit", reportJUnit, { reports.junitXML(duration: duration) }),
            ("--report-html", reportHTML, { reports.html(duration: duration) }),
        ] as [(String, String?, () -> String)] {
            guard let path else { continue }
            do {
                try OutputFile.write(content(), to: path)
            } catch {
                failed(option, error)
            }
        }
        return written
    }

    /// Says on standard error each of standard output and standard error that could not be
    /// written (a full disk, a closed pipe).
    ///
    /// - Returns: Whether both were written whole.
    func reportConsoleFailures() -> Bool {
        let failures = Console.writeFailures()
        for failure in failures { Console.standardError.line("orchestra run: error: \(failure)") }
        return failures.isEmpty
    }
}
