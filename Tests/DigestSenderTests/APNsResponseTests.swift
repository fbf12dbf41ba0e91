import DigestCore
@testable import DigestSender
import Foundation
import Testing

/// The APNs answers table (docs/007-rules-and-limits.md), without I/O.
@Suite struct APNsResponseTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func classify(_ status: Int, _ reason: String?, timestamp: Int64? = nil, apnsID: String? = nil, retryAfter: String? = nil) -> APNsVerdict {
        var body = ""
        if let reason { body = #"{"reason":"\#(reason)""# + (timestamp.map { #","timestamp":\#($0)"# } ?? "") + "}" }
        return APNsResponse.classify(
            status: status, apnsID: apnsID, requestID: "req-id", retryAfter: retryAfter, body: Array(body.utf8), policy: RetryPolicy(), now: now)
    }

    @Test func aSuccessIsSentWithTheAnswersApnsIDElseTheRequests() {
        #expect(Self.classify(200, nil, apnsID: "ans-id") == .sent(apnsID: "ans-id"))
        #expect(Self.classify(200, nil) == .sent(apnsID: "req-id"))
    }

    @Test func badDeviceTokenIsADeadDeviceSuspectOfTheWrongEnvironment() {
        guard case .deviceDead(let code, _, let diedAt, let suspect) = Self.classify(400, "BadDeviceToken") else { Issue.record(); return }
        #expect(code == "BadDeviceToken" && diedAt == nil && suspect)
    }

    @Test(arguments: ["Unregistered", "ExpiredToken"])
    func a410IsADeadDeviceSinceItsTimestamp(reason: String) {
        guard case .deviceDead(let code, let detail, let diedAt, let suspect) = Self.classify(410, reason, timestamp: 1_700_000_123_456) else {
            Issue.record()
            return
        }
        #expect(code == reason && diedAt == 1_700_000_123 && !suspect && detail.contains("2023-11-14T22:15:23Z"), "\(detail)")
    }

    @Test func expiredProviderTokenRenews() {
        guard case .renewToken = Self.classify(403, "ExpiredProviderToken") else { Issue.record(); return }
    }

    @Test(arguments: [
        (403, "InvalidProviderToken", "--apns-key-id"), (403, "MissingProviderToken", "--apns-team-id"), (403, "BadCertificate", "key"),
        (403, "BadCertificateEnvironment", "key"), (403, "Forbidden", "key"), (400, "BadTopic", "--apns-topic"),
        (400, "TopicDisallowed", "--apns-topic"), (400, "MissingTopic", "--apns-topic"), (404, "BadPath", "--apns-endpoint"),
        (405, "MethodNotAllowed", "--apns-endpoint"),
    ] as [(Int, String, String)])
    func refusalsOfTheKeyTopicOrEndpointStop(status: Int, reason: String, advice: String) {
        guard case .stop(let code, let stopCode, let text) = Self.classify(status, reason) else { Issue.record("\(reason)"); return }
        #expect([SenderError.Code.authentication, .configuration].contains(code) && stopCode == reason && text.contains(advice), "\(text)")
    }

    @Test(arguments: [
        (429, "TooManyRequests"), (429, "TooManyProviderTokenUpdates"), (500, "InternalServerError"), (503, "ServiceUnavailable"),
        (503, "Shutdown"), (400, "IdleTimeout"), (502, nil), (302, nil),
    ] as [(Int, String?)])
    func busyAndUnknownAnswersAreRetried(status: Int, reason: String?) {
        guard case .retry(let after, let code, _) = Self.classify(status, reason) else { Issue.record("\(status)"); return }
        #expect(after == nil && code == reason ?? "HTTP_\(status)")
    }

    @Test func aRetryAfterIsHonoured() {
        guard case .retry(let after, _, _) = Self.classify(503, "ServiceUnavailable", retryAfter: "30") else { Issue.record(); return }
        #expect(after == .seconds(30))
    }

    @Test(arguments: [
        (413, "PayloadTooLarge"), (400, "BadCollapseId"), (400, "BadExpirationDate"), (400, "PayloadEmpty"), (400, "DeviceTokenNotForTopic"),
        (400, "BadMessageId"), (400, nil),
    ] as [(Int, String?)])
    func otherBadRequestsKillTheMessageNotTheDevice(status: Int, reason: String?) {
        guard case .messageDead(let code, _) = Self.classify(status, reason) else { Issue.record("\(String(describing: reason))"); return }
        #expect(code == reason ?? "HTTP_\(status)")
    }
}

/// The transport's plain scan of a row's headers reads what the composer writes as the full parser
/// does, and leaves anything else to it.
@Suite struct APNsHeadersScanTests {
    @Test func theComposersHeadersScanAsTheyParse() throws {
        let headers = APNsHeaders(priority: 5, expiration: 1_796_025_600, collapseID: "digest-2026-W47", id: APNsHeaders.id(messageID: "m1"), topic: "com.example.reader")
        let scanned = try #require(APNsTransport.scanHeaders(headers.json))
        #expect(scanned.map(\.name) == headers.fields.map(\.name) && scanned.map(\.value) == headers.fields.map(\.value))
        let noTopic = APNsHeaders(priority: 10, expiration: 0, collapseID: nil)
        #expect(APNsTransport.scanHeaders(noTopic.json)?.map(\.name) == ["apns-push-type", "apns-priority", "apns-expiration"])
    }

    @Test(arguments: [
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1","apns-collapse-id":"a\"b"}"#,  // an escape
        #"{"apns-push-type":"alert","apns-priority":5,"apns-expiration":"1"}"#,  // not a string
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1","x-other":"y"}"#,  // unknown
        #"{"apns-push-type":"alert","apns-priority":"5"}"#,  // a required one missing
        #"{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1","apns-priority":"10"}"#,  // twice
        #" {"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1"}"#, "", "{}",
    ])
    func anythingElseIsLeftToTheFullParser(json: String) {
        #expect(APNsTransport.scanHeaders(json) == nil)
    }
}
