// The libFuzzer entry points. The target is chosen once, from the `FUZZ_TARGET` environment
// variable, because one instrumented binary serves every target (one sanitizer build instead of six).

#if canImport(Glibc)
import Glibc
#endif

// Written once in LLVMFuzzerInitialize, before libFuzzer calls the test function; libFuzzer runs
// inputs on one thread, so no synchronisation is needed.
nonisolated(unsafe) private var selectedTarget: FuzzTarget?

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    guard let raw = getenv("FUZZ_TARGET"), let target = FuzzTarget(rawValue: String(cString: raw)) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        let message = Array("set FUZZ_TARGET to one of: \(names)\n".utf8)
        _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(2)
    }
    selectedTarget = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = size == 0 || data == nil ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    selectedTarget?.run(input)
    return 0
}

#if FUZZING
// SwiftPM links an executable's entry point under the name `<module>_main` (so tests can link the
// module); with no @main in a fuzzing build, that entry point hands over to libFuzzer's driver.
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ testOneInput: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

@_cdecl("reliability_fuzz_main")
public func fuzzingMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    var argumentCount = argc
    var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return runFuzzerDriver(&argumentCount, &arguments) { data, size in fuzzerTestOneInput(data, size) }
}
#endif
