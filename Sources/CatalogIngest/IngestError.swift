/// Errors of turning outside input into events: always with where the input was bad.
public enum IngestError: Error, Sendable, CustomStringConvertible, Equatable {
    /// A recording line that cannot be read.
    case badRecording(file: String, line: Int, reason: String)
    /// A Square body that is not what its endpoint returns.
    case badSquareBody(context: String, reason: String)

    public var description: String {
        switch self {
        case .badRecording(let file, let line, let reason): "\(file):\(line): \(reason)"
        case .badSquareBody(let context, let reason): "\(context): \(reason)"
        }
    }
}
