// The fuzz targets of this harness and how one input is fed to each. Every target must turn any
// byte string into a value or a thrown error: a trap, an overflow or a sanitizer report is a bug.

/// One decoder under fuzzing. The raw value is the name used on the command line, in the
/// `FUZZ_TARGET` environment variable and as the corpus directory name.
enum FuzzTarget: String, CaseIterable {
    /// A segment file read by the verifier, the reader and writer recovery (LedgerStorage).
    case segment
    /// One batch parsed and decoded on its own (BatchHeader.parse, CRC check, decodeRecords, LZ4).
    case batch
    /// EventCodec.decode of an event payload (CatalogModel).
    case eventCodec = "event-codec"
    /// JSONScanner and CatalogObject decoding of a Square catalog object (CatalogModel).
    case catalogObject = "catalog-object"
    /// Webhook body decoding and signature checking (SquareAPI's WebhookSignature.swift).
    case webhook
    /// TimeExpression and RFC 3339 parsing (CatalogModel).
    case timeExpression = "time-expression"
    /// Every JSON parser on the structure-aware generator's documents (JSONGenerator.swift).
    case json
    /// Every JSON parser on the input bytes as they are.
    case jsonRaw = "json-raw"
    /// The server's request path: webhook signature and body, edit and report bodies (RequestAdmission).
    case requestPath = "request-path"

    func run(_ input: [UInt8]) {
        switch self {
        case .segment: SegmentFuzz.run(input)
        case .batch: BatchFuzz.run(input)
        case .eventCodec: EventCodecFuzz.run(input)
        case .catalogObject: CatalogObjectFuzz.run(input)
        case .webhook: WebhookFuzz.run(input)
        case .timeExpression: TimeExpressionFuzz.run(input)
        case .json: JSONFuzz.run(input)
        case .jsonRaw: RawJSONFuzz.run(input)
        case .requestPath: RequestPathFuzz.run(input)
        }
    }
}
