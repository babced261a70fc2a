// Without the fuzzer runtime this executable replays inputs: `reliability-fuzz TARGET FILE...`
// feeds each file to the target once (to reproduce a crash under the debugger, or to smoke-test
// the corpora). Built with -DFUZZING (by Tools/fuzz/run-fuzzers.sh) it has no main: libFuzzer's runs.

#if !FUZZING
import Foundation

@main
struct ReplayMain {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "write-storage-seeds", let outputPath = arguments.dropFirst().first {
            try await StorageSeeds.write(to: outputPath)
            exit(0)
        }
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
            FileHandle.standardError.write(Data("usage: reliability-fuzz <\(names)> FILE_OR_DIRECTORY... | write-storage-seeds CORPUS_DIR\n".utf8))
            exit(2)
        }
        var inputs = 0
        for path in arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            let files = isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target.run(Array(data))
                inputs += 1
            }
        }
        print("\(target.rawValue): replayed \(inputs) inputs without a crash")
    }
}
#endif
