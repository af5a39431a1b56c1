import ArgumentParser
import ServiceKit

/// Entry point: argument parsing only; the service itself is `Reporter.build`.
@main
struct ReporterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reporter",
        abstract: "Cassette reporter: delivers the offline play log to the origin, each play exactly once.",
        version: Daemon.version)

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let code = await Daemon.run(service: "reporter", options: options, build: Reporter.build)
        if code != 0 { throw ExitCode(code) }
    }
}
