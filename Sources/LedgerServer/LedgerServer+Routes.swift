import CatalogIngest
import Foundation
import Hummingbird
import Logging
import NIOCore

extension LedgerServer {
    /// Every route of the server over `service`. Tests may drive it with HummingbirdTesting.
    ///
    /// Every route (and every unknown path) goes through the same two middlewares, added before any
    /// route: request ids and error mapping (a known path called with another method: 405 with
    /// `Allow`), then the token check (`access(method:endpoint:)` is the one table of who may call what).
    public static func router(service: LedgerService, logger: Logger) -> Router<LedgerRequestContext> {
        let router = Router(context: LedgerRequestContext.self)
        let routeMethods = RouteMethods()
        router.add(middleware: RequestIDMiddleware(routes: routeMethods))
        router.add(middleware: AuthMiddleware(service: service))
        router.add(middleware: ForwardingMiddleware(service: service))
        let webhooks = WebhookReceiver(service: service, logger: logger)
        let configuration = service.configuration

        router.get("healthz") { request, _ in
            // "degraded" (still 200: the server keeps recording) when a ledger failed its last verification.
            // Open to load balancers, it says only that: which merchants, segment files and offsets are
            // for a valid token, and only the merchants that token may read (a wrong token is not counted
            // as a guess here: it just gets the open answer).
            let failed = service.failedVerifications()
            var health = ["status": failed.isEmpty ? "ok" : "degraded"]
            let token = AuthMiddleware.bearer(request.headers[.authorization]).flatMap { try? service.tokens.verify($0) }
            if let token {
                health["merchants"] = "\(service.directory.merchantIDs.count)"
                let visible = failed.filter { token.allows(.read, merchant: $0.merchantID.rawValue)
                    || token.allows(.metrics, merchant: $0.merchantID.rawValue) }
                if !visible.isEmpty {
                    health["verification_failed"] = visible.map { $0.merchantID.rawValue }.joined(separator: ",")
                    health["message"] = visible.map { "\($0.merchantID.rawValue): \($0.record.summary)" }.joined(separator: "; ")
                }
            }
            return answer(.encoded(health))
        }
        router.get("metrics") { _, context in
            // A token for one merchant sees that merchant's series (and the server-wide ones), not the others'.
            metricsResponse(service, merchant: context.token?.isAdmin == false ? context.token?.merchant : nil)
        }
        addAdminRoutes(to: router, service: service)
        // Where the API is described: docs/openapi.json, compiled in.
        router.get("/") { _, _ in answer(.encoded(Index())) }
        router.get("openapi.json") { _, _ in
            Response(status: .ok, headers: [.contentType: "application/json"],
                     body: ResponseBody(byteBuffer: ByteBuffer(string: OpenAPIDocument.json)))
        }
        router.post("webhooks/square") { request, context in
            let read = await request.collectBody(upTo: configuration.webhookBodyBytesMax,
                                                 within: configuration.requestReadTimeout)
            guard case .complete(let body) = read else {
                switch read {
                case .tooLarge: service.metrics.webhook(.tooLarge)
                case .tooSlow: service.metrics.webhook(.tooSlow)
                default: service.metrics.webhook(.malformed)
                }
                return refuse(read.refusal(bytesMax: configuration.webhookBodyBytesMax,
                                           timeout: configuration.requestReadTimeout)!, context)
            }
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            return answer(await webhooks.receive(body: Array(buffer: body), headers: headers))
        }
        router.post("merchants/:merchant/edits") { request, context in
            try await withMerchantResponse(service, context) { merchant in
                var edit: EditRequest
                switch await decode(EditRequest.self, request, context, configuration) {
                case .success(let value): edit = value
                case .failure(let failure): return failure.response
                }
                if let token = context.token {
                    edit.actor = actorName(token: token, claimed: edit.actor)
                }
                return answer(try await editing(merchant, refusalStatus: true) { try await merchant.editor.edit(edit) })
            }
        }
        router.post("merchants/:merchant/reports") { request, context in
            try await withMerchantResponse(service, context) { merchant in
                var report: AppReport
                switch await decode(AppReport.self, request, context, configuration) {
                case .success(let value): report = value
                case .failure(let failure): return failure.response
                }
                if let token = context.token {
                    report.actor = actorName(token: token, claimed: report.actor)
                }
                return answer(try await editing(merchant, refusalStatus: false) { try await merchant.editor.report(report) })
            }
        }
        router.post("merchants/:merchant/sync") { _, context in
            try await withMerchant(service, context) { merchant in
                guard let runner = merchant.syncRunner else {
                    return .error(409, "no_square", "this server has no Square connection to sync from")
                }
                await runner.trigger()
                return .encoded(["status": "scheduled"], status: 202)
            }
        }
        router.post("merchants/:merchant/seal") { _, context in
            try await withMerchant(service, context) { merchant in
                // The active segment sealed now, so the next compaction can take it (`catledger seal`).
                .encoded(try await merchant.ledger.sealActiveSegment())
            }
        }
        router.get("merchants/:merchant/objects/:object") { request, context in
            try await withMerchant(service, context) { merchant in
                try ReadAPI.object(merchant, id: context.parameters.get("object") ?? "",
                                   at: request.uri.queryParameters.get("at"),
                                   asKnownAt: request.uri.queryParameters.get("as_known_at"))
            }
        }
        router.get("merchants/:merchant/check-replay") { request, context in
            try await withMerchant(service, context) { merchant in
                let query = request.uri.queryParameters
                return try await ReadAPI.checkReplay(merchant, at: query.get("at"), asKnownAt: query.get("as_known_at"),
                                                     sample: query.get("sample"), seed: query.get("seed"))
            }
        }
        router.get("merchants/:merchant/objects/:object/history") { _, context in
            try await withMerchant(service, context) { try ReadAPI.history($0, id: context.parameters.get("object") ?? "") }
        }
        router.get("merchants/:merchant/objects/:object/prices") { _, context in
            try await withMerchant(service, context) { try ReadAPI.prices($0, id: context.parameters.get("object") ?? "") }
        }
        router.get("merchants/:merchant/conflicts") { _, context in
            try await withMerchant(service, context) { try ReadAPI.conflicts($0) }
        }
        router.get("merchants/:merchant/conflicts/:incident") { _, context in
            try await withMerchant(service, context) {
                try ReadAPI.conflict($0, incident: context.parameters.get("incident") ?? "")
            }
        }
        router.get("merchants/:merchant/changes") { request, context in
            try await withMerchant(service, context) { merchant in
                let query = request.uri.queryParameters
                return try await ChangeFeedAPI.changes(merchant, after: query.get("after"), limit: query.get("limit"),
                                                       wait: query.get("wait"))
            }
        }
        let projectionWait = configuration.projectionReadWait
        router.get("merchants/:merchant/items/:object") { _, context in
            try await withMerchant(service, context) { merchant in
                try await ProjectionAPI.current(merchant, within: projectionWait) {
                    try ProjectionAPI.item($0, id: context.parameters.get("object") ?? "")
                }
            }
        }
        router.get("merchants/:merchant/variations/:object") { _, context in
            try await withMerchant(service, context) { merchant in
                try await ProjectionAPI.current(merchant, within: projectionWait) {
                    try ProjectionAPI.variation($0, id: context.parameters.get("object") ?? "")
                }
            }
        }
        router.get("merchants/:merchant/search") { request, context in
            try await withMerchant(service, context) { merchant in
                try await ProjectionAPI.current(merchant, within: projectionWait) {
                    let query = request.uri.queryParameters
                    return try ProjectionAPI.search($0, text: query.get("q") ?? "", limit: query.get("limit"),
                                                    category: query.get("category"))
                }
            }
        }
        addPageRoutes(router, service: service)
        addOAuthRoutes(router, service: service, logger: logger)
        routeMethods.record(router.routes.map { ("\($0.path)", $0.method.rawValue) })
        return router
    }

    /// What `GET /` answers.
    struct Index: Encodable {
        var name = "catledger"
        var description = "The complete history of Square catalogs: webhooks, safe edits, app reports and the read API."
        var openapi = "/openapi.json"
        var health = "/healthz"
        var documentation = "docs/openapi.json and README.md (API) in the CatalogLedger repository"
    }

    static func metricsResponse(_ service: LedgerService, merchant: String? = nil) -> Response {
        let text = service.renderMetrics()
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: merchant.map { MetricsText.scoped(text, to: $0) } ?? text)))
    }

    static func answer(_ answer: JSONAnswer) -> Response {
        Response(status: .init(code: answer.status), headers: [.contentType: "application/json"],
                 body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// The actor an edit or report made with `token` records: the token's name and id; an actor the
    /// body names is kept beside it as a claim (the body's device is recorded as the device).
    static func actorName(token: APITokenRecord, claimed: String) -> String {
        let claim = claimed.trimmingCharacters(in: .whitespacesAndNewlines)
        return claim.isEmpty || claim == token.name ? token.actorName : "\(token.actorName) claiming \"\(claim)\""
    }

    static func withMerchant(_ service: LedgerService, _ context: LedgerRequestContext,
                                     _ body: (MerchantLedger) async throws -> JSONAnswer) async throws -> Response {
        try await withMerchantResponse(service, context) { answer(try await body($0)) }
    }

    /// Runs `body` for the merchant the path names; an unknown merchant is 404 before any body is read.
    static func withMerchantResponse(_ service: LedgerService, _ context: LedgerRequestContext,
                                             _ body: (MerchantLedger) async throws -> Response) async throws -> Response {
        let id = context.parameters.get("merchant") ?? ""
        do {
            // The merchant's ledger is opened when it is closed, and held open while the body runs.
            guard let response = try await service.withMerchant(id, body) else {
                return answer(.error(404, "unknown_merchant", "this server keeps no ledger for this merchant"))
            }
            return response
        } catch let elsewhere as MerchantElsewhere {
            // Cluster mode: the lease moved after `ForwardingMiddleware` let the request through.
            return merchantMoving(elsewhere, page: false)
        } catch {
            // The detail (which may name files or types) goes to the log only, under the request id.
            context.logger.error("request failed", metadata: ["merchant": "\(id)", "error": "\(error)"])
            return answer(.error(500, "internal", "internal error (request \(context.requestID))"))
        }
    }

    struct DecodeFailure: Error {
        var response: Response
    }

    static func decode<T: Decodable>(_ type: T.Type, _ request: Request, _ context: LedgerRequestContext,
                                             _ configuration: LedgerServerConfiguration) async -> Result<T, DecodeFailure> {
        let limit = configuration.requestBodyBytesMax
        let read = await request.collectBody(upTo: limit, within: configuration.requestReadTimeout)
        guard case .complete(let body) = read else {
            return .failure(DecodeFailure(response: refuse(read.refusal(bytesMax: limit,
                                                                        timeout: configuration.requestReadTimeout)!, context)))
        }
        switch RequestAdmission.body(T.self, Array(buffer: body), contentType: request.headers[.contentType]) {
        case .success(let value): return .success(value)
        case .failure(let refusal): return .failure(DecodeFailure(response: answer(.refusal(refusal))))
        }
    }

    /// Maps edit errors to HTTP: unknown objects 404, bad requests 400, a key reused for a different
    /// edit 422, Square unreachable 502. With `refusalStatus` (the edit route), an edit Square refused
    /// answers `refusedEditStatus` with the same body; a report is answered 200 whatever the app's
    /// write became, since recording it succeeded.
    ///
    /// The edit runs on the merchant's background lane (its calls to Square, its appends, its
    /// diagnosis), below the request path's priority: an edit waits for Square anyway, and a thousand
    /// merchants' webhooks must not queue behind the edits' work (docs/PERFORMANCE.md, "Many merchants").
    private static func editing(_ merchant: MerchantLedger, refusalStatus: Bool,
                                _ body: () async throws -> EditResult) async throws -> JSONAnswer {
        do {
            let result = try await withTaskExecutorPreference(MerchantDirectory.backgroundLane(of: merchant.merchantID.rawValue)) {
                try await body()
            }
            return .encoded(result, status: refusalStatus
                ? editStatus(accepted: result.status == .accepted, squareStatus: result.httpStatus, errorCodes: result.errorCodes)
                : 200)
        } catch let error as EditError {
            let status = switch error.code {
            case .notFound: 404
            case .invalidRequest: 400
            case .idempotencyKeyReused: 422
            case .squareUnavailable: 502
            }
            return .error(status, error.code.rawValue, "\(error.message) (\(error.location))")
        }
    }

    /// The HTTP status of an edit's answer: 200 accepted; for a refusal, 409 Conflict for
    /// VERSION_MISMATCH (the edit was based on a version someone else moved on), Square's own 404 or 409,
    /// 502 when Square refused the server's credentials (401, 403: not the client's fault), and 422 for
    /// any other refusal of a well-formed edit (Square's 400 validation errors).
    public static func editStatus(accepted: Bool, squareStatus: Int, errorCodes: [String]) -> Int {
        guard !accepted else { return 200 }
        if errorCodes.contains("VERSION_MISMATCH") { return 409 }
        switch squareStatus {
        case 401, 403: return 502
        case 404, 409: return squareStatus
        case 400..<500: return 422
        default: return 502
        }
    }
}
