import ArgumentParser
import ServiceKit

/// Entry point: argument parsing only; the service itself is `Downloader.build`.
@main
struct DownloaderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "downloader",
        abstract: "Cassette downloader: fetches stations and media products while the network policy allows.",
        version: Daemon.version)

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let code = await Daemon.run(service: "downloader", options: options, build: Downloader.build)
        if code != 0 { throw ExitCode(code) }
    }
}
