import Foundation
import SquareAPI
import Testing

/// Webhook signatures against vectors computed by Python's hmac
/// (conformance/make_webhook_vectors.py wrote WebhookSignatureVectors.json).
@Suite struct WebhookSignatureTests {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let name: String
        let notification_url: String
        let signature_keys: [String]
        let raw_body: String
        let signature_header: String
        let expected_valid: Bool
        var testDescription: String { name }
    }

    struct VectorFile: Decodable {
        let cases: [Vector]
    }

    static let vectors: [Vector] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("WebhookSignatureVectors.json")
        guard let data = FileManager.default.contents(atPath: url.path),
            let file = try? JSONDecoder().decode(VectorFile.self, from: data)
        else { preconditionFailure("cannot read \(url.path)") }
        return file.cases
    }()

    @Test(arguments: vectors)
    func verificationMatchesPython(_ vector: Vector) {
        let valid = WebhookSignature.verify(
            body: Array(vector.raw_body.utf8), notificationURL: vector.notification_url,
            header: vector.signature_header, signatureKeys: vector.signature_keys)
        #expect(valid == vector.expected_valid)
    }

    @Test(arguments: vectors.filter(\.expected_valid))
    func signingProducesPythonsSignature(_ vector: Vector) {
        let signatures = vector.signature_keys.map {
            WebhookSignature.sign(
                body: Array(vector.raw_body.utf8), notificationURL: vector.notification_url, signatureKey: $0)
        }
        #expect(signatures.contains(vector.signature_header))
    }

    @Test func squaresPublishedSdkVectorVerifies() {
        // From the test suite of Square's SDKs ("test signature validation pass").
        let body = #"{"merchant_id":"MLEFBHHSJGVHD","type":"webhooks.test_notification","event_id":"ac3ac95b-f97d-458c-a6e6-18981597e05f","created_at":"2022-07-13T20:30:59.037339943Z","data":{"type":"webhooks","id":"bc368e64-01aa-407e-b46e-3231809b1129"}}"#
        let url = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
        #expect(
            WebhookSignature.verify(
                body: Array(body.utf8), notificationURL: url, header: "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4=",
                signatureKeys: ["Ibxx_5AKakO-3qeNVR61Dw"]))
    }

    @Test func missingHeaderOrNoKeysNeverVerify() {
        let body = Array("{}".utf8)
        let header = WebhookSignature.sign(body: body, notificationURL: "https://x", signatureKey: "k")
        #expect(!WebhookSignature.verify(body: body, notificationURL: "https://x", header: nil, signatureKeys: ["k"]))
        #expect(!WebhookSignature.verify(body: body, notificationURL: "https://x", header: header, signatureKeys: []))
        #expect(!WebhookSignature.verify(body: body, notificationURL: "https://x", header: "not base64!", signatureKeys: ["k"]))
    }
}
