import AsyncHTTPClient
import DigestTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The fake server holds requests to FCM's v1 rules, so a sender that passes against it sends valid requests.
@Suite struct FakeFCMServerTests {
    static func message(_ fields: String) -> [UInt8] { Array(#"{"message":{\#(fields)}}"#.utf8) }

    @Test func fixtureMessagesOfEveryPlatformPass() {
        for i in 1...3 {
            guard case .success(let accepted) = FCMRequestRules.check(Array(OutboxFixture.message(i).utf8)) else {
                Issue.record("message \(i) refused")
                continue
            }
            #expect(accepted.token == OutboxFixture.token(i) && accepted.collapseKey == "digest-2026-W46")
        }
    }

    @Test(arguments: [
        (#""topic":"a","token":"t""#, "exactly one"),
        (#""data":{"n":1},"token":"t""#, "TYPE_STRING"),
        (#""data":{"google.x":"1"},"token":"t""#, "reserved"),
        (#""token":"t","android":{"ttl":"3d"}"#, "ttl"),
        (#""token":"t","android":{"colour":"red"}"#, "Unknown name"),
        (#""token":"t","apns":{"headers":{"apns-collapse-id":"\#(String(repeating: "x", count: 65))"}}"#, "64 bytes"),
        (#""token":"t","apns":{"payload":{"aps":{"alert":"\#(String(repeating: "x", count: 4100))"}}}"#, "too big"),
        (#""token":"t","webpush":{"notification":{"actions":[{},{},{}]}}"#, "actions"),
        (#""token":"t","webpush":{"fcm_options":{"link":"http://x"}}"#, "https"),
        (#""token":"t","bogus":1"#, "Unknown name"),
    ])
    func violationsAreRefused(fields: String, expected: String) {
        guard case .failure(let violation) = FCMRequestRules.check(Self.message(fields)) else {
            Issue.record("accepted: \(fields)")
            return
        }
        #expect(violation.message.contains(expected))
    }

    @Test func sendingNeedsABearerTokenFromItsTokenEndpoint() async throws {
        let server = try await FakeFCMServer.start()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var request = HTTPClientRequest(url: "\(server.url)/v1/projects/digest-test/messages:send")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer made-up")
        request.body = .bytes(ByteBuffer(string: OutboxFixture.message(1)))
        let response = try await client.execute(request, timeout: .seconds(5))
        #expect(response.status.code == 401)
        _ = try await response.body.collect(upTo: 1 << 16)
        #expect(server.stats.answers == ["401": 1] && server.stats.delivered == 0)
        try await client.shutdown()
        try await server.shutdown()
    }
}
