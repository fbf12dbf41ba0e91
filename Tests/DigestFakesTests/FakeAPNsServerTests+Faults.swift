import DigestTesting
import Foundation
import Testing

/// The fake APNs server's injected faults: the tokens' own answers, the random errors after the
/// request's checks, the delays.
extension FakeAPNsServerTests {
    @Test func answersTheTokensFaults() async throws {
        let gone = String(repeating: "01", count: 32)
        let bad = String(repeating: "02", count: 32)
        var faults = FakeAPNsServer.Faults()
        faults.unregistered = [gone.uppercased(): 1_700_000_000_123]
        faults.badDeviceTokens = [bad]
        guard let client = try await Self.start(faults: faults) else { return }
        let unregistered = try await client.send(token: gone)
        #expect(unregistered.status == 410 && unregistered.reason == "Unregistered")
        let body = try #require((try JSONSerialization.jsonObject(with: Data(unregistered.body.utf8))) as? [String: Any])
        #expect((body["timestamp"] as? NSNumber)?.int64Value == 1_700_000_000_123)
        let refused = try await client.send(token: bad)
        #expect(refused.status == 400 && refused.reason == "BadDeviceToken")
        #expect(try await client.send().status == 200)

        // By rate: every token unregistered since a day before the server's now.
        faults = .init()
        faults.unregisteredRate = 1
        client.server.setFaults(faults)
        let byRate = try await client.send()
        let rateBody = try #require((try JSONSerialization.jsonObject(with: Data(byRate.body.utf8))) as? [String: Any])
        #expect(byRate.status == 410 && (rateBody["timestamp"] as? NSNumber)?.int64Value == Self.now * 1000 - 86_400_000)
        faults = .init()
        faults.badDeviceTokenRate = 1
        client.server.setFaults(faults)
        #expect(try await client.send().reason == "BadDeviceToken")
        faults = .init()
        faults.wrongEnvironment = true
        client.server.setFaults(faults)
        #expect(try await client.send(token: String(repeating: "03", count: 32)).reason == "BadDeviceToken")

        // About a tenth of tokens at a rate of 0.1, the same ones each time.
        faults = .init()
        faults.unregisteredRate = 0.1
        client.server.setFaults(faults)
        var unregisteredTokens: [Int] = []
        for i in 0..<100 {
            let token = String(format: "%064lx", i * 7919)
            if try await client.send(token: token).status == 410 { unregisteredTokens.append(i) }
        }
        #expect((3...20).contains(unregisteredTokens.count), "\(unregisteredTokens.count)")
        for i in unregisteredTokens.prefix(3) { #expect(try await client.send(token: String(format: "%064lx", i * 7919)).status == 410) }
        try await client.shutdown()
    }

    @Test func injectsErrorsAfterTheChecks() async throws {
        guard let client = try await Self.start() else { return }
        let cases: [(WritableKeyPath<FakeAPNsServer.Faults, Double>, Int, String)] = [
            (\.tooManyRequestsRate, 429, "TooManyRequests"), (\.internalRate, 500, "InternalServerError"), (\.unavailableRate, 503, "ServiceUnavailable"),
        ]
        for (rate, status, reason) in cases {
            var faults = FakeAPNsServer.Faults()
            faults[keyPath: rate] = 1
            client.server.setFaults(faults)
            let response = try await client.send()
            #expect(response.status == status && response.reason == reason, "\(response.body)")
            // A bad request is still a bad request.
            #expect(try await client.send(headers: [("apns-push-type", "alert")]).reason == "MissingTopic")
            #expect(try await client.send(authorization: .some(nil)).reason == "MissingProviderToken")
        }
        var faults = FakeAPNsServer.Faults()
        faults.dropRate = 1
        client.server.setFaults(faults)
        await #expect(throws: (any Error).self) { try await client.send() }
        client.server.setFaults(.init())
        #expect(try await client.send().status == 200)
        let stats = client.server.stats
        #expect(stats.answers["drop"] == 1 && stats.answers["429 TooManyRequests"] == 1 && stats.answers["200"] == 1, "\(stats)")
        #expect(stats.delivered == 1 && stats.connections == 2, "\(stats)")
        try await client.shutdown()
    }

    @Test func delaysAnswersWithoutHoldingTheOthers() async throws {
        var faults = FakeAPNsServer.Faults()
        faults.minDelayMilliseconds = 300
        faults.maxDelayMilliseconds = 300
        guard let client = try await Self.start(faults: faults) else { return }
        let start = ContinuousClock.now
        #expect(try await client.send().status == 200)
        // After the first success the connection carries many at once: ten answers in about one delay.
        try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<10 { group.addTask { try await client.send(token: String(format: "%064lx", i)).status } }
            for try await status in group { #expect(status == 200) }
        }
        let elapsed = ContinuousClock.now - start
        // Concurrent, not one after another (which takes at least 3.3 s): the server's own count says so,
        // whatever the machine's load does to the wall time.
        #expect(elapsed >= .milliseconds(600), "\(elapsed)")
        let stats = client.server.stats
        #expect(stats.maxInFlight > 1 && stats.maxStreamsUsed > 1 && stats.refusedStreams == 0, "\(stats)")
        try await client.shutdown()
    }
}
