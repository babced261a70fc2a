import Crypto
import Foundation

/// Square's webhook signature: header `x-square-hmacsha256-signature` =
/// base64(HMAC-SHA256(key: signature key, message: notification URL + raw body bytes)).
///
/// The URL must be the subscription's URL byte for byte, and the body the bytes received:
/// re-serialised JSON does not verify.
public enum WebhookSignature {
    public static let headerName = "x-square-hmacsha256-signature"

    /// The header value Square sends for this body.
    public static func sign(body: [UInt8], notificationURL: String, signatureKey: String) -> String {
        let key = SymmetricKey(data: Array(signatureKey.utf8))
        var message = Array(notificationURL.utf8)
        message += body
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return Data(mac).base64EncodedString()
    }

    /// True when `header` is the signature of `body` under any of `signatureKeys` (several keys
    /// are valid during rotation). Comparison is constant-time in the signature bytes.
    public static func verify(
        body: [UInt8], notificationURL: String, header: String?, signatureKeys: [String]
    ) -> Bool {
        guard let header, let received = Data(base64Encoded: header), received.count == SHA256.byteCount else {
            return false
        }
        var message = Array(notificationURL.utf8)
        message += body
        var valid = false
        // Check every key even after a match so timing does not reveal which key matched.
        for signatureKey in signatureKeys where !signatureKey.isEmpty {
            let key = SymmetricKey(data: Array(signatureKey.utf8))
            if HMAC<SHA256>.isValidAuthenticationCode(received, authenticating: message, using: key) {
                valid = true
            }
        }
        return valid
    }
}
