import DigestCore
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
}
