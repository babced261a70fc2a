import LedgerServer
import MerchantRegistry
import Testing

/// The signed `state` of the server's authorize URLs: the callback's only authentication.
@Suite struct OAuthStateTests {
    /// A secrets key of 32 bytes `key`, as the environment gives one.
    static func box(_ key: UInt8 = 1) throws -> SecretBox {
        try #require(try SecretBox.load(dataRoot: "/nonexistent", environment: [
            SecretBox.environmentVariable: HexDigits.encode([UInt8](repeating: key, count: 32)),
        ], create: false))
    }

    static func states(_ key: UInt8 = 1) throws -> OAuthStates { OAuthStates(box: try box(key)) }

    @Test("a state is accepted once before its expiry; a replay, an expired, a forged, a re-signed or a malformed one is refused")
    func stateChecks() throws {
        let states = try Self.states()
        let state = states.make(expiresAt: 1_000)
        try states.redeem(state, now: 999)
        #expect(throws: OAuthStates.Refusal.replayed) { try states.redeem(state, now: 999) }
        #expect(throws: OAuthStates.Refusal.expired) { try states.redeem(states.make(expiresAt: 1_000), now: 1_000) }
        // Another data root's key, or a later expiry written over a real state: not this server's signature.
        #expect(throws: OAuthStates.Refusal.forged) { try states.redeem(try Self.states(2).make(expiresAt: 1_000), now: 1) }
        let parts = states.make(expiresAt: 1_000).split(separator: ".")
        #expect(throws: OAuthStates.Refusal.forged) { try states.redeem("\(parts[0]).99999.\(parts[2])", now: 1) }
        for malformed in ["", "abc", "a.b.c", "\(parts[0]).1000", "\(parts[0]).x.\(parts[2])"] {
            #expect(throws: OAuthStates.Refusal.malformed, "\(malformed)") { try states.redeem(malformed, now: 1) }
        }
        // An HMAC made for another purpose with the same key does not sign a state.
        let box = try Self.box()
        let signed = "\(parts[0]).1000"
        let otherPurpose = HexDigits.encode(box.authenticationCode(Array(signed.utf8), purpose: "something-else"))
        #expect(throws: OAuthStates.Refusal.forged) { try states.redeem("\(signed).\(otherPurpose)", now: 1) }
    }
}
