import DigestCore
import DigestImport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// `digest collect` and `digest report` as the binary runs them: the key file read again on SIGHUP,
/// a graceful stop on SIGTERM, the report of what was collected.
@Suite struct CollectBinaryTests {
    /// Waits (up to 30 s) for `condition`, checking every 20 ms.
    static func eventually(_ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    @Test func collectReloadsKeysOnSIGHUPAndReportShowsTheEvents() async throws {
        let store = try await StoreHarness(.sqlite)
        let message = FixtureMessage(user: "u1", variant: .image, arm: "image")
        try await store.write([message])
        let db = store.directory.path("store.sqlite")
        let keyFile = store.directory.path("keys")
        let first = "first-key-0123456789", second = "second-key-0123456789"
        try "\(first)\n".write(toFile: keyFile, atomically: true, encoding: .utf8)

        let collector = try DigestBinary.start(
            ["collect", "--db", db, "--key-file", keyFile, "--port", "0"], name: "collect", in: store.directory.url)
        defer { collector.kill() }
        #expect(try await Self.eventually { collector.stdout.contains("/v1/events (1 key)") }, "\(collector.stderr)")
        let line = try #require(collector.stdout.split(separator: "\n").first { $0.hasPrefix("collecting events on ") })
        let port = try #require(Int(line.split(separator: ":")[2].split(separator: "/")[0]))

        let opened = HTTP.body([HTTP.event(message.messageID, "opened", at: Int64(Date().timeIntervalSince1970) - 60)])
        let accepted = try await HTTP.post(port: port, key: first, body: opened)
        #expect(accepted.0 == 202)
        #expect(try HTTP.result(accepted.1) == EventBatchResult(accepted: 1))

        try "# rotated\n\(second)\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        kill(collector.process.processIdentifier, SIGHUP)
        #expect(try await Self.eventually { collector.stdout.contains("keys reloaded: 1 key") }, "\(collector.stderr)")
        #expect(try await HTTP.post(port: port, key: first, body: opened).0 == 401)
        let again = try await HTTP.post(port: port, key: second, body: opened)
        #expect(again.0 == 202)
        #expect(try HTTP.result(again.1) == EventBatchResult(duplicates: 1))

        kill(collector.process.processIdentifier, SIGTERM)
        let output = try await collector.finish()
        #expect(output.status == 0 && !output.signalled, "\(output.stderr)")

        let report = try await DigestBinary.run(["report", "--db", db, "--week", "2026-W47", "--json"])
        #expect(report.status == 0, "\(report.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any])
        let rows = try #require(json["rows"] as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows.first?["variant"] as? String == "Image" && rows.first?["sent"] as? Int == 1 && rows.first?["opened"] as? Int == 1)
        let split = try #require(json["split"] as? [String: Any])
        #expect((split["arms"] as? [[String: Any]])?.map { $0["arm"] as? String } == ["image"])
        // --chart writes the same figures as a chart beside the table.
        let chart = store.directory.path("week.svg")
        let drawn = try await DigestBinary.run(["report", "--db", db, "--week", "2026-W47", "--chart", chart])
        #expect(drawn.status == 0 && drawn.stdout.contains("week 2026-W47: 1 sent, 1 opened"), "\(drawn.stderr)")
        let svg = try String(contentsOfFile: chart, encoding: .utf8)
        #expect(svg.hasPrefix("<svg ") && svg.contains(#"data-label="Image""#) && svg.contains(#"data-label="image arm""#), "\(svg)")
        let unwritable = try await DigestBinary.run(["report", "--db", db, "--week", "2026-W47", "--chart", store.directory.path("no/such/dir.svg")])
        #expect(unwritable.status != 0 && unwritable.stderr.contains("cannot write the chart to"), "\(unwritable.stderr)")

        let bad = try await DigestBinary.run(["collect", "--db", db, "--key-file", store.directory.path("missing")])
        #expect(bad.status != 0 && bad.stderr.contains("--key-file"), "\(bad.stderr)")
        let week = try await DigestBinary.run(["report", "--db", db, "--week", "2026-47"])
        #expect(week.status == 64 && week.stderr.contains("--week"), "\(week.stderr)")
    }

    /// `--reply-key-file`: a press with its message's reply key changes the reader's preferences; the
    /// file is read again on SIGHUP (a key of a removed secret is then refused); a file that cannot be
    /// read is an error naming the flag.
    @Test func collectAppliesPressesWithReplyKeysAndReloadsThemOnSIGHUP() async throws {
        let store = try await StoreHarness(.sqlite)
        let reader = Reader(id: "u1", locale: "en", timeZone: "UTC", optedOut: false, devices: [Device(token: "tok-u1", platform: .android)])
        _ = try await store.withImporter { try await $0.sink.write(.users([reader])) }
        let message = FixtureMessage(user: "u1")
        try await store.write([message])
        let db = store.directory.path("store.sqlite")
        let keyFile = store.directory.path("keys"), replyFile = store.directory.path("reply-keys")
        let appKey = "first-key-0123456789", old = "old-reply-secret-0123456789", new = "new-reply-secret-0123456789"
        try "\(appKey)\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        try "# reply secrets\n\(old)\n".write(toFile: replyFile, atomically: true, encoding: .utf8)

        let collector = try DigestBinary.start(
            ["collect", "--db", db, "--key-file", keyFile, "--reply-key-file", replyFile, "--port", "0"], name: "collect", in: store.directory.url)
        defer { collector.kill() }
        #expect(try await Self.eventually { collector.stdout.contains("buttons applied with 1 reply secret") }, "\(collector.stderr)")
        let line = try #require(collector.stdout.split(separator: "\n").first { $0.hasPrefix("collecting events on ") })
        let port = try #require(Int(line.split(separator: ":")[2].split(separator: "/")[0]))
        let at = Int64(Date().timeIntervalSince1970) - 60
        func press(_ action: String, secret: String) throws -> Data {
            let key = try ReplyKeys(secrets: [secret]).sign(messageID: message.messageID)
            return HTTP.body([
                #"{"message_id":"\#(message.messageID)","type":"action","action":"\#(action)","reply_key":"\#(key)","at":"\#(Timestamp.format(at))"}"#
            ])
        }
        let paused = try await HTTP.post(port: port, key: appKey, body: try press("pause", secret: old))
        #expect(try HTTP.result(paused.1) == EventBatchResult(accepted: 1))
        let expected = ReaderActionEffect.localDate(of: at, zone: "UTC").adding(days: 28)
        #expect(try await store.database.preferences(of: "u1")?.preferences.pausedUntil == expected)

        try "\(new)\n".write(toFile: replyFile, atomically: true, encoding: .utf8)
        kill(collector.process.processIdentifier, SIGHUP)
        #expect(try await Self.eventually { collector.stdout.contains("reply keys reloaded: 1 secret") }, "\(collector.stderr)")
        let refused = try await HTTP.post(port: port, key: appKey, body: try press("off", secret: old))
        #expect(try HTTP.result(refused.1) == EventBatchResult(rejected: [RejectedEvent(index: 0, reason: .badReplyKey)]))
        let stopped = try await HTTP.post(port: port, key: appKey, body: try press("off", secret: new))
        #expect(try HTTP.result(stopped.1) == EventBatchResult(accepted: 1))
        #expect(try await store.database.preferences(of: "u1")?.preferences.off == true)
        kill(collector.process.processIdentifier, SIGTERM)
        _ = try await collector.finish()

        let bad = try await DigestBinary.run(["collect", "--db", db, "--key-file", keyFile, "--reply-key-file", store.directory.path("missing")])
        #expect(bad.status != 0 && bad.stderr.contains("--reply-key-file"), "\(bad.stderr)")
    }
}
