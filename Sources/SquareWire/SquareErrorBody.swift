// Square's error body: `{"errors":[{"category","code","detail","field"}]}`.

/// An error code as Square sends it. Open: codes Square adds later still decode.
public struct SquareErrorCode: RawRepresentable, Hashable, Sendable, Encodable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
    public var description: String { rawValue }

    public static let versionMismatch = SquareErrorCode("VERSION_MISMATCH")
    public static let invalidValue = SquareErrorCode("INVALID_VALUE")
    public static let notFound = SquareErrorCode("NOT_FOUND")
    public static let rateLimited = SquareErrorCode("RATE_LIMITED")
    public static let idempotencyKeyReused = SquareErrorCode("IDEMPOTENCY_KEY_REUSED")
    public static let internalServerError = SquareErrorCode("INTERNAL_SERVER_ERROR")
    public static let unauthorized = SquareErrorCode("UNAUTHORIZED")
    public static let badRequest = SquareErrorCode("BAD_REQUEST")
    public static let missingRequiredParameter = SquareErrorCode("MISSING_REQUIRED_PARAMETER")
    public static let invalidCursor = SquareErrorCode("INVALID_CURSOR")
    /// 401 on any call with an OAuth access token past its `expires_at` (refresh it).
    public static let accessTokenExpired = SquareErrorCode("ACCESS_TOKEN_EXPIRED")
    /// 401 on any call with an access token whose authorization the seller or the app revoked.
    public static let accessTokenRevoked = SquareErrorCode("ACCESS_TOKEN_REVOKED")
    /// 403 when the token lacks the permission (OAuth scope) the call needs.
    public static let insufficientScopes = SquareErrorCode("INSUFFICIENT_SCOPES")
}

/// One entry of Square's `errors` array.
public struct SquareErrorDetail: Hashable, Sendable, Encodable {
    public var category: String
    public var code: SquareErrorCode
    public var detail: String?
    public var field: String?

    public init(category: String, code: SquareErrorCode, detail: String? = nil, field: String? = nil) {
        self.category = category
        self.code = code
        self.detail = detail
        self.field = field
    }
}

/// Square's error body: `{"errors":[...]}`. Encoded by the simulator (`SquareJSON.encode`), read
/// with `init(body:)` by the client and, inside any response, by `SquareCatalogResponse`.
public struct SquareErrorBody: Hashable, Sendable, Encodable {
    public var errors: [SquareErrorDetail]
    public init(errors: [SquareErrorDetail]) { self.errors = errors }

    /// Reads a body leniently: entries that are not objects are skipped, a missing `category` or
    /// `code` reads as empty. Throws `SquareWireError` when the body is not a JSON object.
    public init(body: [UInt8]) throws {
        let json = try JSONScanner.parse(body)
        guard case .object = json else {
            throw SquareWireError(.invalidJSON, "error body is not a JSON object", location: "byte 0")
        }
        errors = json["errors"].map(Self.details(in:)) ?? []
    }

    /// The entries of an `errors` array.
    static func details(in errors: JSONValue) -> [SquareErrorDetail] {
        (errors.arrayValue ?? []).compactMap { entry in
            guard case .object = entry else { return nil }
            return SquareErrorDetail(
                category: entry["category"]?.stringValue ?? "",
                code: SquareErrorCode(entry["code"]?.stringValue ?? ""),
                detail: entry["detail"]?.stringValue,
                field: entry["field"]?.stringValue)
        }
    }
}
