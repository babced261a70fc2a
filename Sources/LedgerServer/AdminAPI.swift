// The merchants of a running server, managed over HTTP with the admin token: list, add (with the
// merchant's own Square credentials and webhook subscription, sealed in the registry), pause, resume
// and remove. Each change is written to the data root's merchant registry (the same one
// `catledger merchant` writes) and takes effect at once: an added merchant is served, a paused or
// removed one is closed. The API never deletes a ledger: `catledger merchant remove --purge
// --confirm` does, once the server no longer holds it.

import CatalogModel
import Foundation
import Hummingbird
import LedgerQueries
import MerchantRegistry
import SquareWire

/// One merchant as the admin API shows it: the registry's record (never a secret) and whether the
/// server serves it and holds its ledger open now.
struct MerchantAnswer: Encodable, Sendable {
    var merchantID: String
    /// `active`, `paused` or `removed` in the registry; `active` for a merchant only given by `--merchant`.
    var state: String
    var stateReason: String?
    var registered: Bool
    var configured: Bool
    var served: Bool
    var open: Bool
    var authorizationRevoked: String?
    var addedAt: String?
    var addedAtNs: Int64?
    var changedAt: String?
    var changedAtNs: Int64?
    var notificationURL: String?
    var hasCredentials: Bool
    var credentialsExpireAt: String?
    var signatureKeyCount: Int
    /// A registry row whose id is not a Square merchant id (written before ids were checked this
    /// strictly): never served; listed so an operator can remove it.
    var invalidID: Bool?

    enum CodingKeys: String, CodingKey {
        case invalidID = "invalid_id"
        case merchantID = "merchant_id", state, stateReason = "state_reason", registered, configured, served, open,
             authorizationRevoked = "authorization_revoked", addedAt = "added_at", addedAtNs = "added_at_ns",
             changedAt = "changed_at", changedAtNs = "changed_at_ns", notificationURL = "notification_url",
             hasCredentials = "has_credentials", credentialsExpireAt = "credentials_expire_at",
             signatureKeyCount = "signature_key_count"
    }
}

struct MerchantsAnswer: Encodable, Sendable {
    var schemaVersion = AnswerSchema.version
    var merchants: [MerchantAnswer]

    enum CodingKeys: String, CodingKey {
        case schemaVersion = "schema_version", merchants
    }
}

/// The body of `POST /admin/merchants`.
struct AddMerchantRequest: Decodable, Sendable {
    var merchantID: String
    var squareAccessToken: String?
    var squareRefreshToken: String?
    /// RFC 3339.
    var squareTokenExpiresAt: String?
    var signatureKeys: [String]?
    var notificationURL: String?

    enum CodingKeys: String, CodingKey {
        case merchantID = "merchant_id", squareAccessToken = "square_access_token",
             squareRefreshToken = "square_refresh_token", squareTokenExpiresAt = "square_token_expires_at",
             signatureKeys = "signature_keys", notificationURL = "notification_url"
    }
}

/// The body of a pause (optional).
struct MerchantStateRequest: Decodable, Sendable {
    var reason: String?
}

enum AdminAPI {
    /// Every merchant the registry holds (removed ones with `?all=true`) and every merchant the
    /// server serves, in id order.
    static func merchants(_ service: LedgerService, includingRemoved: Bool) throws -> MerchantsAnswer {
        let registry = try openRegistry(service, create: false)
        let records = try registry?.list(includingRemoved: includingRemoved) ?? []
        // Rows with ids outside Square's alphabet are listed apart, each on its own: two of them may
        // be equal as Swift strings (canonical equivalence) though the registry holds both.
        let valid = records.filter { MerchantRegistry.isValidMerchantID($0.merchantID) }
        let invalid = records.filter { !MerchantRegistry.isValidMerchantID($0.merchantID) }
        let byID = Dictionary(valid.map { ($0.merchantID, $0) }, uniquingKeysWith: { first, _ in first })
        let statuses = Dictionary(service.directory.statuses().map { ($0.merchantID.rawValue, $0) },
                                  uniquingKeysWith: { first, _ in first })
        let ids = Set(byID.keys).union(statuses.keys).sorted()
        var answers = ids.map { merchant(service, $0, record: byID[$0], status: statuses[$0]) }
        for record in invalid {
            var answer = merchant(service, record.merchantID, record: record, status: nil)
            answer.invalidID = true
            answers.append(answer)
        }
        return MerchantsAnswer(merchants: answers)
    }

    static func merchant(_ service: LedgerService, _ id: String, record: MerchantRecord?,
                       status: MerchantDirectory.Status?) -> MerchantAnswer {
        MerchantAnswer(
            merchantID: id, state: record?.state.rawValue ?? "active", stateReason: record?.stateReason,
            registered: record != nil, configured: status?.configured ?? service.configuration.merchantIDs.contains(id),
            served: status != nil, open: status?.open ?? false,
            authorizationRevoked: service.directory.health(of: MerchantID(id))?.revocation,
            addedAt: record.map { AnswerTime.ledger($0.addedAt) }, addedAtNs: record?.addedAt,
            changedAt: record.map { AnswerTime.ledger($0.changedAt) }, changedAtNs: record?.changedAt,
            notificationURL: record?.notificationURL, hasCredentials: record?.hasCredentials ?? false,
            credentialsExpireAt: record?.credentialsExpireAt.map { AnswerTime.ledger($0) },
            signatureKeyCount: record?.signatureKeyCount ?? 0)
    }

    static func one(_ service: LedgerService, _ id: String) throws -> MerchantAnswer {
        let record = try openRegistry(service, create: false)?.record(id)
        guard MerchantRegistry.isValidMerchantID(id) else {
            var answer = merchant(service, id, record: record, status: nil)
            answer.invalidID = true
            return answer
        }
        let status = service.directory.status(of: MerchantID(id))
        return merchant(service, id, record: record, status: status)
    }

    /// Registers the merchant (or makes a paused or removed one active again) and serves it at once.
    static func add(_ service: LedgerService, _ request: AddMerchantRequest) async throws -> JSONAnswer {
        let id = request.merchantID
        guard MerchantRegistry.isValidMerchantID(id) else {
            return .error(400, "invalid_merchant_id", "\(LogText.quoted(id)) is not a Square merchant id",
                          hint: MerchantRegistry.merchantIDHint)
        }
        var expiresAt: Int64?
        if let text = request.squareTokenExpiresAt {
            guard let parsed = try? RFC3339.parse(text) else {
                return .error(400, "invalid_time", "square_token_expires_at is not an RFC 3339 time",
                              hint: "write it as 2026-12-24T09:00:00Z")
            }
            expiresAt = parsed
        }
        if request.squareAccessToken == nil, request.squareRefreshToken != nil || expiresAt != nil {
            return .error(400, "invalid_request", "a refresh token or expiry needs square_access_token")
        }
        if let url = request.notificationURL, !(url.hasPrefix("https://") || url.hasPrefix("http://")) {
            return .error(400, "invalid_request", "notification_url must be the http(s) URL registered with Square")
        }
        let keys = (request.signatureKeys ?? []).filter { !$0.isEmpty }
        let registry = try openRegistry(service, create: true)!
        if let existing = try registry.record(id), existing.state == .active {
            return .error(409, "merchant_exists", "merchant \(id) is already registered and active",
                          hint: "pause or remove it first, or leave it as it is")
        }
        let credentials = request.squareAccessToken.map {
            SquareCredentials(accessToken: $0, refreshToken: request.squareRefreshToken, expiresAt: expiresAt)
        }
        try registry.add(id, credentials: credentials, signatureKeys: keys, notificationURL: request.notificationURL,
                         now: now(service))
        try await service.directory.reload()
        service.logger.notice("merchant added by the admin API", metadata: ["merchant": "\(id)"])
        return .encoded(try one(service, id), status: 201)
    }

    /// Pauses, resumes or removes a registered merchant; a merchant only given by `--merchant` is
    /// registered first, so the change outlives a restart.
    static func setState(_ service: LedgerService, _ id: String, _ state: MerchantRecord.State,
                         reason: String?) async throws -> JSONAnswer {
        let registry = try openRegistry(service, create: true)!
        guard MerchantRegistry.isValidMerchantID(id) else {
            // A row written before ids were checked can be paused or removed, never served again.
            guard state != .active, try registry.record(id) != nil else {
                return .error(404, "unknown_merchant", "no such merchant", hint: MerchantRegistry.merchantIDHint)
            }
            try registry.setState(id, state, reason: reason.map { String($0.prefix(500)) } ?? defaultReason(state), now: now(service))
            return .encoded(try one(service, id))
        }
        if try registry.record(id) == nil {
            guard service.configuration.merchantIDs.contains(id) else {
                return .error(404, "unknown_merchant", "merchant \(id) is not registered",
                              hint: "add it with POST /admin/merchants")
            }
            try registry.add(id, credentials: nil, signatureKeys: [], notificationURL: nil, now: now(service))
        }
        let text = reason.map { String($0.prefix(500)) }
        try registry.setState(id, state, reason: text ?? defaultReason(state), now: now(service))
        try await service.directory.reload()
        service.logger.notice("merchant state changed by the admin API", metadata: ["merchant": "\(id)", "state": "\(state.rawValue)"])
        return .encoded(try one(service, id))
    }

    private static func defaultReason(_ state: MerchantRecord.State) -> String? {
        switch state {
        case .active: nil
        case .paused: "paused by the admin API"
        case .removed: "removed by the admin API; ledger kept"
        }
    }

    private static func now(_ service: LedgerService) -> Int64 {
        service.configuration.clock.nanoseconds()
    }

    private static func openRegistry(_ service: LedgerService, create: Bool) throws -> MerchantRegistry? {
        try MerchantRegistry.open(dataRoot: service.configuration.dataRoot, create: create)
    }
}

extension LedgerServer {
    /// The admin routes (admin scope: the access table's default).
    static func addAdminRoutes(to router: Router<LedgerRequestContext>, service: LedgerService) {
        let configuration = service.configuration
        router.get("admin/merchants") { request, context in
            await admin(context) {
                let all = request.uri.queryParameters.get("all")
                guard all == nil || all == "true" || all == "false" else {
                    return .error(400, "invalid_request", "all takes true or false", hint: "GET /admin/merchants?all=true lists removed merchants too")
                }
                return .encoded(try AdminAPI.merchants(service, includingRemoved: all == "true"))
            }
        }
        router.post("admin/merchants") { request, context in
            switch await decode(AddMerchantRequest.self, request, context, configuration) {
            case .failure(let failure): return failure.response
            case .success(let body): return await admin(context) { try await AdminAPI.add(service, body) }
            }
        }
        router.get("admin/merchants/:merchant_id") { _, context in
            await admin(context) {
                let id = context.parameters.get("merchant_id") ?? ""
                let answer = try AdminAPI.one(service, id)
                guard answer.registered || answer.served else { return .error(404, "unknown_merchant", "no such merchant") }
                return .encoded(answer)
            }
        }
        for (verb, state) in [("pause", MerchantRecord.State.paused), ("resume", .active)] {
            router.post("admin/merchants/:merchant_id/\(verb)") { request, context in
                var reason: String?
                if state == .paused, request.headers[.contentLength].map({ $0 != "0" }) ?? false {
                    switch await decode(MerchantStateRequest.self, request, context, configuration) {
                    case .failure(let failure): return failure.response
                    case .success(let body): reason = body.reason
                    }
                }
                return await admin(context) {
                    try await AdminAPI.setState(service, context.parameters.get("merchant_id") ?? "", state, reason: reason)
                }
            }
        }
        router.delete("admin/merchants/:merchant_id") { _, context in
            await admin(context) {
                try await AdminAPI.setState(service, context.parameters.get("merchant_id") ?? "", .removed, reason: nil)
            }
        }
    }

    /// Runs an admin route; a registry that cannot be read or written is a 500 naming the request id
    /// (the detail goes to the log only).
    private static func admin(_ context: LedgerRequestContext, _ body: () async throws -> JSONAnswer) async -> Response {
        do {
            return answer(try await body())
        } catch {
            context.logger.error("admin request failed", metadata: ["error": "\(error)"])
            return answer(.error(500, "internal", "internal error (request \(context.requestID))"))
        }
    }
}
