// Cluster mode (docs/SCALING.md, "Forwarding"): a request for a merchant another node writes (a read,
// an edit, a report, a page) is sent on to that node's `--node-address` and its answer relayed. The
// forwarded request carries `X-Catledger-Forwarded-By`, so the node that receives it answers it
// itself or refuses it 503 `merchant_moving`, never forwards it again: a lease that moved meanwhile
// (or two nodes whose last rounds disagree) cannot make a request bounce between nodes. Webhooks are
// never forwarded: any node accepts them into the cluster's inbox.

import AsyncHTTPClient
import CatalogModel
import Foundation
import HTTPTypes
import Hummingbird
import LedgerPages
import Logging
import NIOCore
import NIOHTTP1

/// Sends requests on to the node that writes their merchant. Thread-safety: immutable after init;
/// AsyncHTTPClient's `HTTPClient` is safe to share.
final class RequestForwarder: Sendable {
    /// Marks a forwarded request; its value names the node that forwarded it.
    static let headerName = HTTPField.Name("X-Catledger-Forwarded-By")!
    /// The request headers sent on: the caller's credentials (the token, or a page's sign-in cookie),
    /// what the body is and what the caller accepts. Anything else (hop-by-hop headers, `Host`, the
    /// caller's own forwarding headers) stays here.
    static let requestHeaders: [HTTPField.Name] = [.authorization, .cookie, .contentType, .accept, .acceptLanguage]
    /// Response headers not relayed: hop-by-hop ones (RFC 9110, 7.6.1), and those this node's server
    /// sets itself (the length of the body it sends, its request id, its date and name).
    static let unrelayedResponseHeaders: Set<String> = [
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding",
        "upgrade", "proxy-connection", "content-length", "x-request-id", "date", "server",
    ]

    let nodeID: String
    let timeout: Duration
    /// The largest answer relayed (a page, a CSV of changes); a longer one is 502 `forward_failed`.
    let responseBytesMax: Int
    let client: HTTPClient
    let metrics: ServerMetrics

    init(nodeID: String, timeout: Duration, responseBytesMax: Int = 128 << 20, metrics: ServerMetrics) {
        self.nodeID = nodeID
        self.timeout = timeout
        self.responseBytesMax = responseBytesMax
        self.metrics = metrics
        // Redirects are the caller's to follow (a page's sign-in redirect is relayed as it is).
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow,
                                                     timeout: .init(connect: .seconds(2), read: TimeAmount(timeout)))
        configuration.httpVersion = .http1Only
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func shutdown() async {
        try? await client.shutdown()
    }

    deinit {
        // A service dropped without `close()` (a failed start, a test): the client goes too, in the
        // background (it keeps itself alive until its connections are closed). After `shutdown()`
        // this only reports that it is already shut down.
        client.shutdown(queue: .global()) { _ in }
    }

    /// What became of a request this node did not answer itself (`catledger_forwarded_requests_total`).
    enum Outcome: String, CaseIterable {
        case relayed
        /// The owner did not answer within the timeout.
        case timeout
        /// The owner could not be reached (refused, reset, no route).
        case unreachable
        /// A forwarded request for a merchant this node does not write (or one between owners): refused 503.
        case moving
        /// The answer was too long to relay.
        case tooLarge = "too_large"
    }

    /// Sends `request` (its body read here within the server's limits) to `address` and relays the answer.
    func forward(_ request: Request, context: LedgerRequestContext, merchant: String, to address: String, ownerNodeID: String,
                 configuration: LedgerServerConfiguration) async -> Response {
        var body: ByteBuffer?
        if request.method != .get && request.method != .head {
            let read = await request.collectBody(upTo: configuration.requestBodyBytesMax, within: configuration.requestReadTimeout)
            guard case .complete(let complete) = read else {
                return LedgerServer.refuse(read.refusal(bytesMax: configuration.requestBodyBytesMax,
                                                        timeout: configuration.requestReadTimeout)!, context)
            }
            body = complete
        }
        var outgoing = HTTPClientRequest(url: "http://\(address)\(request.head.path ?? request.uri.path)")
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for name in Self.requestHeaders {
            for value in request.headers[values: name] { outgoing.headers.add(name: name.rawName, value: value) }
        }
        outgoing.headers.add(name: RequestID.headerName.rawName, value: context.requestID)
        outgoing.headers.add(name: Self.headerName.rawName, value: nodeID)
        if let body { outgoing.body = .bytes(body) }
        let logMetadata: Logger.Metadata = ["merchant": "\(merchant)", "owner": "\(ownerNodeID)", "address": "\(address)"]
        do {
            let answer = try await client.execute(outgoing, timeout: TimeAmount(timeout), logger: nil)
            let bytes = try await answer.body.collect(upTo: responseBytesMax)
            var headers = HTTPFields()
            for header in answer.headers where !Self.unrelayedResponseHeaders.contains(header.name.lowercased()) {
                if let name = HTTPField.Name(header.name) { headers.append(HTTPField(name: name, value: header.value)) }
            }
            metrics.forwarded(.relayed)
            return Response(status: .init(code: Int(answer.status.code)), headers: headers, body: ResponseBody(byteBuffer: bytes))
        } catch is NIOTooManyBytesError {
            metrics.forwarded(.tooLarge)
            context.logger.warning("the owner's answer to a forwarded request was too long to relay", metadata: logMetadata)
            return LedgerServer.answer(.error(502, "forward_failed", "the answer of the node that writes this merchant is too long to relay",
                                              hint: "ask that node directly: node \(ownerNodeID)"))
        } catch {
            // The detail (which may name addresses, sockets or types) goes to the log only.
            var metadata = logMetadata
            metadata["error"] = "\(error)"
            let page = LedgerServer.isPage(context.endpointPath)
            if Self.isTimeout(error) {
                metrics.forwarded(.timeout)
                context.logger.warning("a forwarded request timed out", metadata: metadata)
                return Self.unavailable("owner_timeout", "the node that writes this merchant did not answer in time", page: page)
            }
            metrics.forwarded(.unreachable)
            context.logger.warning("a forwarded request could not reach the merchant's node", metadata: metadata)
            return Self.unavailable("owner_unreachable", "the node that writes this merchant cannot be reached", page: page)
        }
    }

    static func isTimeout(_ error: any Error) -> Bool {
        guard let error = error as? HTTPClientError else { return false }
        return error == .deadlineExceeded || error == .readTimeout
    }

    /// 503 with `Retry-After` (a page for a page route): the merchant's node is unavailable now (a
    /// new owner takes its merchants within the lease).
    static func unavailable(_ code: String, _ message: String, page: Bool) -> Response {
        var response = page
            ? LedgerServer.response(Pages.error(status: 503, title: "Served by another node",
                                                message: "The node that writes this merchant cannot answer now. Try again in a few seconds."))
            : LedgerServer.errorResponse(503, code, message, hint: "retry in a few seconds: if that node is down, another takes its merchants over")
        response.headers[.retryAfter] = "\(retryAfterSeconds)"
        return response
    }

    /// What a refused (503) request's `Retry-After` says: a round of the cluster is a quarter of the
    /// lease, so the owner is usually known again within a second or two.
    static let retryAfterSeconds = 2
}

/// Forwards the requests for a merchant another node writes (added after `AuthMiddleware`: the token
/// is checked here first, and again by the owner, which sees the same `Authorization`).
struct ForwardingMiddleware: RouterMiddleware {
    typealias Context = LedgerRequestContext
    let service: LedgerService

    func handle(_ request: Request, context: LedgerRequestContext,
                next: (Request, LedgerRequestContext) async throws -> Response) async throws -> Response {
        guard let forwarder = service.forwarder, let ownership = service.cluster?.ownership,
              let merchant = context.parameters.get("merchant"), service.directory.isServed(MerchantID(merchant)),
              let elsewhere = ownership.elsewhere(merchant) else {
            return try await next(request, context)
        }
        if request.headers[RequestForwarder.headerName] != nil {
            // Forwarded here by a node that believed this one writes the merchant: never sent on again.
            service.metrics.forwarded(.moving)
            return LedgerServer.merchantMoving(elsewhere, request: request, context: context)
        }
        guard let owner = elsewhere.ownerNodeID, let address = elsewhere.ownerAddress else {
            service.metrics.forwarded(.moving)
            return LedgerServer.merchantMoving(elsewhere, request: request, context: context)
        }
        return await forwarder.forward(request, context: context, merchant: merchant, to: address, ownerNodeID: owner,
                                       configuration: service.configuration)
    }
}

extension LedgerServer {
    /// 503 `merchant_moving` with `Retry-After` (a page for a page route): the merchant is between
    /// owners, its lease moved while the request was on its way, or this node was sent a forwarded
    /// request for a merchant it does not write. The body of the request, if any, is not read: the
    /// connection closes after the answer.
    static func merchantMoving(_ elsewhere: MerchantElsewhere, request: Request, context: LedgerRequestContext) -> Response {
        var response = merchantMoving(elsewhere, page: isPage(context.endpointPath))
        if (request.headers[.contentLength].flatMap { Int($0) } ?? 0) > 0 || request.headers[.transferEncoding] != nil {
            context.stopReading()
            response.headers[.connection] = "close"
        }
        return response
    }

    static func merchantMoving(_ elsewhere: MerchantElsewhere, page: Bool) -> Response {
        var response: Response
        if page {
            response = Self.response(Pages.error(status: 503, title: "Served by another node",
                                                 message: "Merchant \(elsewhere.merchantID) is moving between the nodes of the cluster. Try again in a few seconds."))
        } else {
            response = answer(.error(503, "merchant_moving", "merchant \"\(elsewhere.merchantID)\" is moving between the nodes of the cluster",
                                     hint: "retry in a few seconds"))
        }
        response.headers[.retryAfter] = "\(RequestForwarder.retryAfterSeconds)"
        return response
    }
}
