import ArgumentParser
import Foundation

/// Records the sample cafe's history by driving the simulator with a seeded script.
@main
struct SampleGen: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample-gen",
        abstract: "Record a seeded, realistic catalog history (data-samples/cafe) by driving the Square simulator.",
        discussion: "The same seed and options give the same files byte for byte.")

    @Option(help: "Seed of the script and the simulator.")
    var seed: UInt64 = 20_261_001

    @Option(help: "Days of history (the committed sample: 52; days 46-52 are the week of images, deletes, toggles, options, stock and locations).")
    var days = 52

    @Option(help: "Output directory.")
    var out = "data-samples/cafe"

    @Option(help: "Copies of the cafe menu (1: the committed sample; ~1700 gives 100k items for benchmarks, not committed).")
    var scale = 1

    func validate() throws {
        guard scale >= 1 else { throw ValidationError("--scale must be at least 1") }
        guard days >= 1 else { throw ValidationError("--days must be at least 1") }
    }

    func run() async throws {
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        // 2026-10-01T07:00:00Z: the cafe's catalog goes live.
        let recorder = await HistoryRecorder(seed: seed, start: 1_790_838_000 * 1_000_000_000)
        var script = CafeScript(seed: seed, days: days, scale: scale, recorder: recorder)
        try await script.run { day in
            if isatty(STDERR_FILENO) == 1 { FileHandle.standardError.write(Data("\rday \(day)/\(days)".utf8)) }
        }
        let historyPath = out + "/cafe-history.jsonl"
        try recorder.writeRecording(to: historyPath)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try (encoder.encode(script.answers) + Data("\n".utf8)).write(to: URL(fileURLWithPath: out + "/answers.json"))
        print("\nwrote \(recorder.exchanges.count) exchanges to \(historyPath), \(script.answers.incidents.count) incidents, " +
              "\(script.answers.checkpoints.count) checkpoints")
    }
}
