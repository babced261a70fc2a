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
