import DigestCore
import DigestSQLite
@testable import DigestSender
import DigestStore
import Foundation
import Testing

/// The FCM errors table (docs/007-rules-and-limits.md) as verdicts, without I/O.
@Suite struct FCMResponseTests {
    static func body(_ code: Int, _ status: String, fcm: String? = nil) -> [UInt8] {
        let details = fcm.map { #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"# } ?? ""
        return Array(#"{"error":{"code":\#(code),"message":"m","status":"\#(status)"\#(details)}}"#.utf8)
    }

    struct Fixed: RandomNumberGenerator {
        mutating func next() -> UInt64 { .max }  // the top of every jitter range
    }

    static func verdict(_ status: Int, _ body: [UInt8], retryAfter: String? = nil, attempt: Int = 1) -> FCMVerdict {
        var random = Fixed()
        return FCMResponse.verdict(status: status, retryAfter: retryAfter, body: body, attempt: attempt, policy: RetryPolicy(),
                                   now: Date(timeIntervalSince1970: 1_800_000_000), random: &random)
    }

    @Test func successCarriesFCMsName() {
        #expect(Self.verdict(200, Array(#"{"name":"projects/p/messages/0:1"}"#.utf8)) == .sent(name: "projects/p/messages/0:1"))
        #expect(Self.verdict(200, Array(#"{ "name" : "projects/p/messages/2" }"#.utf8)) == .sent(name: "projects/p/messages/2"))
        #expect(Self.verdict(200, Array(#"{"name":"projects\/p\/messages\/3"}"#.utf8)) == .sent(name: "projects/p/messages/3"))
    }

    @Test func unregisteredIsDeadAndRemovesTheDevice() {
        #expect(Self.verdict(404, Self.body(404, "NOT_FOUND", fcm: "UNREGISTERED")) == .dead(code: "UNREGISTERED", detail: "m", unregistered: true))
    }

    @Test(arguments: [(400, "INVALID_ARGUMENT"), (403, "SENDER_ID_MISMATCH")])
    func badMessagesAreDeadWithTheirReason(status: Int, code: String) {
        #expect(Self.verdict(status, Self.body(status, "X", fcm: code)) == .dead(code: code, detail: "m", unregistered: false))
    }

    @Test func quotaWaitsAtLeastAMinuteWhateverRetryAfterSays() {
        let verdict = Self.verdict(429, Self.body(429, "RESOURCE_EXHAUSTED", fcm: "QUOTA_EXCEEDED"), retryAfter: "5")
        #expect(verdict == .retry(after: .seconds(60), code: "QUOTA_EXCEEDED", detail: "m"))
        let longer = Self.verdict(429, [], retryAfter: "120")
        #expect(longer == .retry(after: .seconds(120), code: "QUOTA_EXCEEDED", detail: "HTTP 429"))
    }

    @Test func unavailableHonoursRetryAfterAndBacksOffExponentially() {
        let body = Self.body(503, "UNAVAILABLE", fcm: "UNAVAILABLE")
        #expect(Self.verdict(503, body, retryAfter: "30", attempt: 1) == .retry(after: .seconds(30), code: "UNAVAILABLE", detail: "m"))
        // Attempt 6: backoff up to 32 s beats Retry-After 30 s.
        guard case .retry(let after, _, _) = Self.verdict(503, body, retryAfter: "30", attempt: 6) else { Issue.record(); return }
        #expect(after > .seconds(31) && after <= .seconds(32))
        guard case .retry(let internalAfter, let code, _) = Self.verdict(500, Self.body(500, "INTERNAL"), attempt: 3) else { Issue.record(); return }
        #expect(code == "INTERNAL" && internalAfter <= .seconds(4) && internalAfter >= .seconds(2))
        // An HTTP-date Retry-After.
        let date = Self.verdict(503, body, retryAfter: "Fri, 15 Jan 2027 08:00:10 GMT")
        guard case .retry(let dated, _, _) = date else { Issue.record(); return }
        #expect(dated == .seconds(10))
    }

    @Test func authProblemsStopTheSender() {
        #expect(Self.verdict(401, Self.body(401, "UNAUTHENTICATED", fcm: "THIRD_PARTY_AUTH_ERROR")) == .stop(.thirdPartyAuth, code: "THIRD_PARTY_AUTH_ERROR", detail: "m"))
        #expect(Self.verdict(401, Self.body(401, "UNAUTHENTICATED")) == .reauthenticate(detail: "m"))
        #expect(Self.verdict(403, Self.body(403, "PERMISSION_DENIED")) == .stop(.authentication, code: "PERMISSION_DENIED", detail: "m"))
        #expect(Self.verdict(404, Self.body(404, "NOT_FOUND")) == .stop(.configuration, code: "NOT_FOUND", detail: "m"))
        // FCM never redirects (and `digest send` does not follow redirects): the endpoint is wrong.
        #expect(Self.verdict(301, []) == .stop(.configuration, code: "HTTP_301", detail: "HTTP 301"))
    }

    @Test func backoffIsJitteredBetweenHalfAndAllOfItsCeilingAndCapped() {
        var random = SystemRandomNumberGenerator()
        var policy = RetryPolicy()
        for attempt in 1...20 {
            let ceiling = min(pow(2, Double(attempt - 1)), 900)
            for _ in 0..<20 {
                let delay = policy.backoff(attempt: attempt, using: &random).seconds
                #expect(delay >= ceiling / 2 && delay <= ceiling)
            }
        }
        policy.timeScale = 0.01
        #expect(policy.backoff(attempt: 1, using: &random) <= .milliseconds(10))
        #expect(policy.scaled(.seconds(60)) == .milliseconds(600))
    }

    @Test func theRatePacerSpreadsSendsEvenly() {
        var pacer = RatePacer<ContinuousClock.Instant>(perMinute: 600, burst: 1)  // one per 100 ms
        let start = ContinuousClock.now
        #expect(pacer.reserve(now: start) == .zero)
        #expect(pacer.reserve(now: start) == .milliseconds(100))
        #expect(pacer.reserve(now: start) == .milliseconds(200))
        // After a long pause, no credit beyond the burst.
        #expect(pacer.reserve(now: start + .seconds(10)) == .zero)
        #expect(pacer.reserve(now: start + .seconds(10)) == .milliseconds(100))
    }

    /// FCM's quota is per minute: whatever the pauses, no minute holds more sends than the rate, and
    /// a steady sender gets all but the burst's share of it.
    @Test(arguments: [(600, 1), (600, 10), (60_000, 1_000), (7, 3)])
    func theRatePacerNeverExceedsTheRateInAnyMinute(perMinute: Int, burst: Int) {
        var pacer = RatePacer<ContinuousClock.Instant>(perMinute: perMinute, burst: burst)
        var random = SystemRandomNumberGenerator()
        let start = ContinuousClock.now
        var now = start
        var sends: [ContinuousClock.Instant] = []
        let horizon = start + .seconds(300)
        while now < horizon {
            // Busy spells (each send as soon as the pacer allows) of up to 90 s, pauses of up to 30 s
            // between them: the credit a pause leaves is spent, then the steady rate holds.
            let busyUntil = now + .milliseconds(Int.random(in: 1...90_000, using: &random))
            while now < busyUntil {
                now += pacer.reserve(now: now)
                sends.append(now)
            }
            now += .milliseconds(Int.random(in: 1...30_000, using: &random))
        }
        var first = 0
        for last in sends.indices {
            while sends[last] - sends[first] >= .seconds(60) { first += 1 }
            #expect(last - first + 1 <= perMinute, "sends in a minute ending at \(sends[last] - start)")
            if last - first + 1 > perMinute { return }
        }
        #expect(pacer.perSecond >= Double(perMinute - burst) / 60 * 0.999)
    }

    /// A 429's Retry-After holds every connection until the latest deadline any answer asked for:
    /// seen in the sends (messages wait to be sent throughout) and the hold reports.
    @Test func theQuotaHoldKeepsTheLatestDeadline() {
        var hold = SenderStateMachineTests.Run(concurrency: 4)
        func holds() -> Int { hold.reported.filter { $0 == .held }.count }
        #expect(hold.sends.count == 4 && holds() == 0)
        hold.answer(.retry(after: nil, .init(code: "QUOTA_EXCEEDED", detail: "m"), pauseEverything: .seconds(30)))
        #expect(holds() == 1)
        hold.lease(4)  // four more wait; a request and room are free
        hold.answer(.retry(after: nil, .init(code: "QUOTA_EXCEEDED", detail: "m"), pauseEverything: .seconds(5)))
        #expect(holds() == 1)  // a shorter Retry-After does not shorten the hold
        hold.wait(.seconds(29))
        #expect(hold.sends.count == 4)
        hold.answer(.retry(after: nil, .init(code: "QUOTA_EXCEEDED", detail: "m"), pauseEverything: .seconds(60)))
        #expect(holds() == 2)
        hold.wait(.seconds(2))
        #expect(hold.sends.count == 4)  // past the first hold's end: the longer one holds
        hold.wait(.seconds(57))
        #expect(hold.sends.count == 4)
        hold.wait(.seconds(1))  // 29 s + 60 s
        #expect(hold.sends.count > 4)
    }

    @Test func aDryRunAddsValidateOnly() {
        #expect(FCMTransport.dryRun(#"{"message":{"token":"t"}}"#) == #"{"validate_only":true,"message":{"token":"t"}}"#)
    }
}
