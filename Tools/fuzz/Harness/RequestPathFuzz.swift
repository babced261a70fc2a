// The server's request path without sockets: the same `RequestAdmission` functions the routes call
// (Sources/LedgerServer/RequestAdmission.swift, compiled here through a symbolic link). The first
// input byte picks the route and whether the webhook body is signed with a configured key (so a
// generated body reaches the parser) or carries a header taken from the input; the rest describes
// a body through the JSON generator, or is the body itself.

import BoundedJSON
import CatalogModel
import Foundation

enum RequestPathFuzz {
    static let notificationURL = "https://ledger.example.com/webhooks/square"
    static let signatureKeys = ["fuzz-signature-key", "rotated-key"]
    static let contentTypes: [String?] = [nil, "application/json", "application/json; charset=utf-8",
                                          "application/merge-patch+json", "text/plain", "multipart/form-data; boundary=x",
                                          "application/x-www-form-urlencoded", "", "application/json\r\nx-injected: 1"]

    static func run(_ input: [UInt8]) {
        guard let selector = input.first else { return }
        let rest = Array(input.dropFirst())
        let body = selector & 0x08 == 0 ? JSONGenerator.document(from: rest) : rest
        switch selector % 4 {
        case 0, 1:
            var headers = ["content-type": "application/json", "square-retry-number": "1"]
            if selector & 0x10 == 0 {
                headers[WebhookSignature.headerName] = WebhookSignature.sign(
                    body: body, notificationURL: notificationURL, signatureKey: signatureKeys[Int(selector >> 5) % 2])
            } else if selector & 0x20 == 0 {
                headers[WebhookSignature.headerName] = String(decoding: rest.prefix(64), as: UTF8.self)
            }
            let signed = selector & 0x10 == 0
            switch RequestAdmission.webhook(body: body, headers: headers, notificationURL: notificationURL,
                                            signatureKeys: signatureKeys) {
            case .success(let webhook):
                precondition(signed || headers[WebhookSignature.headerName] != nil)
                _ = EventCodec.encode(webhook.event)
            case .failure(let refusal):
                precondition(refusal.status == 401 || refusal.status == 400, "\(refusal)")
                precondition(!signed || refusal.status == 400, "a correctly signed delivery was refused: \(refusal)")
            }
        case 2:
            check(RequestAdmission.body(EditRequest.self, body, contentType: contentTypes[Int(selector >> 4) % contentTypes.count]))
        default:
            check(RequestAdmission.body(AppReport.self, body, contentType: contentTypes[Int(selector >> 4) % contentTypes.count]))
        }
    }

    static func check<T>(_ result: Result<T, RequestAdmission.Refusal>) {
        if case .failure(let refusal) = result {
            precondition(refusal.status == 400 || refusal.status == 415, "\(refusal)")
        }
    }
}
