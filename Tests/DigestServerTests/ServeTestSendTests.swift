import DigestSQLite
import DigestTesting
import Foundation
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `digest serve --test-devices` as a process, with the fake FCM server in this test process, both on
/// loopback: "Send to my device" reaches the named device only, marked as a test, and leaves the
/// outbox and the report as they were.
@Suite struct ServeTestSendTests {
    /// POSTs `body` as JSON (with `headers` added): the status and the answer's fields.
    static func post(_ url: String, _ body: String, headers: [String: String] = ["Content-Type": "application/json"]) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = "POST"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = Data(body.utf8)
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
    }

    /// The outbox as rows of every column that a send would change.
    static func outbox(_ path: String) throws -> String? {
        try OutboxFixture.scalar(path: path, """
            SELECT count(*) || ':' || group_concat(id || '|' || state || '|' || attempts || '|' || coalesce(leased_until, '') || '|' \
            || coalesce(last_error, '') || '|' || coalesce(sent_at, '') || '|' || length(message), ';') FROM digest_outbox
            """)
    }

    @Test func sendToMyDeviceReachesOnlyThatDeviceAndChangesNoOutboxRowNorTheReport() async throws {
        let dir = try TemporaryDirectory()
        let database = try await FixtureDatabase.make(in: dir)
        await database.close()
        let run = try await DigestBinary.run(["run", "--db", database.path, "--week", FixtureDatabase.week])
        #expect(run.status == 0, "\(run.stderr)")
        let outbox = try Self.outbox(database.path)
        let report = try await DigestBinary.run(["report", "--db", database.path, "--week", FixtureDatabase.week])
        let outboxID = try OutboxFixture.scalar(path: database.path, "SELECT message_id FROM digest_outbox WHERE user_id = 'u-pl' AND platform = 'android'")

        let fcm = try await FakeFCMServer.start()
        fcm.keepBodies()
        try fcm.writeServiceAccount(to: dir.path("sa.json"))
        let pixel = "ana-pixel-token-0123456789"
        let iphone = String(repeating: "0a1b2c3d", count: 7) + "abcd2345"
        try Data("""
            [{"name": "Ana's Pixel", "provider": "fcm", "platform": "android", "token": "\(pixel)"},
             {"name": "Ana's iPhone", "provider": "apns", "platform": "ios", "token": "\(iphone)"}]
            """.utf8).write(to: dir.url.appendingPathComponent("devices.json"))
        let serve = try DigestBinary.start(
            ["serve", "--db", database.path, "--port", "0", "--render-threads", "1", "--test-devices", dir.path("devices.json"),
             "--credentials", dir.path("sa.json"), "--endpoint", fcm.url],
            name: "serve", in: dir.url)
        defer { serve.kill() }
        var port: Int?
        for _ in 0..<600 where port == nil && serve.process.isRunning {
            if let range = serve.stdout.range(of: #"127\.0\.0\.1:(\d+)/"#, options: .regularExpression) {
                port = Int(serve.stdout[range].dropFirst("127.0.0.1:".count).dropLast())
            }
            if port == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let base = "http://127.0.0.1:\(try #require(port, "serve printed no port: \(serve.stderr)"))"

        // The list: names, providers, platforms, tokens masked; the iPhone unavailable (no APNs key given).
        let (list, listed) = try await LiveServer.get("\(base)/api/test-devices")
        #expect(listed == 200)
        let text = String(decoding: list, as: UTF8.self)
        #expect(!text.contains(pixel) && !text.contains(iphone) && !text.contains("0123456789"), "\(text)")
        let devices = try #require(try JSONSerialization.jsonObject(with: list) as? [[String: Any]])
        #expect(devices.map { $0["target"] as? String } == ["…6789", "…2345"])
        #expect(devices[0]["unavailable"] == nil && (devices[1]["unavailable"] as? String)?.contains("--apns-key-file") == true)

        // The outbox's android message, to the Pixel only, with a fresh id and "test": "1" in its data.
        let send = #"{"user": "u-pl", "week": "2026-W46", "device": "Ana's Pixel"}"#
        let (status, sent) = try await Self.post("\(base)/api/test-send", send, headers: ["Content-Type": "application/json", "Origin": base])
        #expect(status == 200, "\(sent)")
        #expect(sent["sent"] as? Bool == true && sent["source"] as? String == "outbox" && sent["device"] as? String == "Ana's Pixel")
        let messageID = try #require(sent["message_id"] as? String)
        #expect(messageID.count == 32 && messageID != outboxID)
        #expect(Array(fcm.deliveries.keys) == [pixel] && fcm.stats.answers == ["200": 1], "\(fcm.stats)")
        let delivered = try #require(fcm.bodies(for: pixel).first)
        let message = try #require((try JSONSerialization.jsonObject(with: Data(delivered.utf8)) as? [String: Any])?["message"] as? [String: Any])
        // An Android message holds every key in android.data (no top-level data).
        let data = try #require((message["android"] as? [String: Any])?["data"] as? [String: String], "\(delivered)")
        #expect(data["test"] == "1" && data["message_id"] == messageID && message["token"] as? String == pixel, "\(delivered)")
        #expect(try Self.outbox(database.path) == outbox)

        // u-zh reads on the web only: its android message is composed now.
        let (composedStatus, composed) = try await Self.post("\(base)/api/test-send", #"{"user": "u-zh", "week": "2026-W46", "device": "Ana's Pixel"}"#)
        #expect(composedStatus == 200 && composed["source"] as? String == "composed", "\(composed)")

        // Refusals before anything is sent or counted.
        let refusals: [(String, [String: String], Int)] = [
            (#"{"user": "u-pl", "week": "2026-W46", "device": "Ana's iPhone"}"#, ["Content-Type": "application/json"], 503),
            (#"{"user": "u-pl", "week": "2026-W46", "device": "Bo's phone"}"#, ["Content-Type": "application/json"], 404),
            (#"{"user": "nobody", "week": "2026-W46", "device": "Ana's Pixel"}"#, ["Content-Type": "application/json"], 404),
            (send, ["Content-Type": "text/plain"], 415),
            (send, ["Content-Type": "application/json", "Origin": "http://evil.example"], 403),
        ]
        for (body, headers, expected) in refusals {
            let (status, answer) = try await Self.post("\(base)/api/test-send", body, headers: headers)
            #expect(status == expected, "\(body) \(headers): \(answer)")
        }
        #expect(fcm.stats.requests == 2)

        // Ten a minute per device: eight more go (the unknown reader was counted against none), the eleventh is refused.
        for _ in 1...8 {
            let (status, answer) = try await Self.post("\(base)/api/test-send", send)
            #expect(status == 200, "\(answer)")
        }
        let (tooMany, answer) = try await Self.post("\(base)/api/test-send", send)
        #expect(tooMany == 429 && "\(answer)".contains("had 10 test sends in the last minute"), "\(answer)")
        #expect(fcm.stats.requests == 10 && Array(fcm.deliveries.keys) == [pixel])
        #expect(Set(fcm.bodies(for: pixel).map { $0.contains(#""test":"1""#) }) == [true])

        #expect(try Self.outbox(database.path) == outbox)
        let after = try await DigestBinary.run(["report", "--db", database.path, "--week", FixtureDatabase.week])
        #expect(report.status == 0 && after.stdout == report.stdout, "\(report.stdout)\n---\n\(after.stdout)")
        try await fcm.shutdown()
    }
}
