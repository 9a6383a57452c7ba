/// Traps with `message` when a caller broke an API's contract (a limit below 1, a negative
/// delay).
///
/// Unlike `precondition`, whose message is dropped in optimized builds, this prints the message
/// (naming the function, the parameter and the value) in every build configuration, so the
/// crash report says what was wrong.
@usableFromInline
package func checkArgument(
    _ condition: Bool,
    _ message: @autoclosure () -> String,
    file: StaticString = #fileID,
    line: UInt = #line
) {
    if !condition {
        fatalError(message(), file: file, line: line)
    }
}
