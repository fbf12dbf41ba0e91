import ArgumentParser

@main
struct DigestBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "digest-bench",
        abstract: "Benchmark harness for the weekly run (see scripts/bench.sh) and the images (scripts/bench-images.sh).",
        subcommands: [Generate.self, Reference.self, Report.self, Phases.self, Checkpoint.self, Images.self])
}
