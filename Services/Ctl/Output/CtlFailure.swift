import ArgumentParser
import Wire

/// A command that failed, with what it says to people (stderr) and to scripts (`--json`:
/// `{"error":{"code","name","message",…}}` on stdout) and its exit status. `code` is the
/// service's error code when the service answered with an error, else the exit status: the
/// failure was seen by cassettectl itself (no socket, no answer, a failure event).
struct CtlFailure: Error, Equatable {
    var code: Int
    var name: String
    var message: String
    var exit: Int32
    var service: ServiceName?
    var method: String?
    /// What to run next, naming cassettectl commands.
    var hint: String?
    /// The service's `error.data.reason`, where it named one.
    var reason: String?
    /// The stderr line (after `cassettectl: `).
    var text: String

    init(
        name: String, message: String, exit: Int32, service: ServiceName? = nil, method: String? = nil,
        code: Int? = nil, hint: String? = nil, text: String? = nil
    ) {
        self.code = code ?? Int(exit)
        self.name = name
        self.message = message
        self.exit = exit
        self.service = service
        self.method = method
        self.hint = hint
        self.text = text ?? message
    }

    /// An error the service answered with: exit 1, shown as `<service>: <Name>: <message>`.
    static func answered(_ error: RPCError, service: ServiceName, method: String, params: JSONValue = [:]) -> CtlFailure {
        let reason = error.details["reason"]?.stringValue
        var hint = Hints.forError(error.name, service: service, params: params, reason: reason)
        if error.name == "MethodNotFound" {
            hint = "this \(service.rawValue) does not offer '\(method)' (an older or not yet complete service; update it together with cassettectl)."
        }
        var failure = CtlFailure(
            name: error.name, message: error.message, exit: ExitStatus.serviceError, service: service,
            method: method, code: error.code, hint: hint,
            text: "\(service.rawValue): \(error.name): \(error.message)")
        failure.reason = reason
        return failure
    }

    var json: JSONValue {
        var error: [String: JSONValue] = ["code": .number(Double(code)), "name": .string(name), "message": .string(message)]
        if let service { error["service"] = .string(service.rawValue) }
        if let method { error["method"] = .string(method) }
        if let hint { error["hint"] = .string(hint) }
        return ["error": .object(error)]
    }

    /// Prints the failure once and gives the exit to throw.
    func report(json: Bool) -> ExitCode {
        if json { print(CtlOutput.pretty(self.json)) }
        CtlOutput.error(text)
        if let hint { CtlOutput.error("hint: " + hint) }
        return ExitCode(exit)
    }
}
