import ArgumentParser

/// `cassette-bench`: every benchmark of `make bench`, one subcommand per area, each printing
/// Cassette's figures beside a peer's (MPD, curl, aria2c) measured in the same run.
@main
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cassette-bench",
        abstract: "Cassette's benchmarks, side by side with their peers.",
        subcommands: [
            StatusBench.self,
            PlaybackBench.self,
            PlaylogBench.self,
            DownloadBench.self,
            GaplessBench.self,
            FootprintBench.self,
            HLSBench.self,
            FlashBench.self,
            NIOFloorServer.self,
            HTTPFloorServer.self,
        ],
        defaultSubcommand: StatusBench.self)
}
