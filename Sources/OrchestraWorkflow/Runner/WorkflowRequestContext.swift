/// What the request a transport is sending belongs to, for a transport that hands requests to
/// other processes (`orchestra run --state postgres://…`): set by the runner around each
/// step's send, read in `HTTPTransport.send` (task-local values reach the coordinator's tasks).
package enum WorkflowRequestContext {
    /// The timeout of the step whose request is being sent; `nil` outside a step (the `auth:`
    /// block's login and refresh).
    @TaskLocal package static var timeout: Duration?
}
