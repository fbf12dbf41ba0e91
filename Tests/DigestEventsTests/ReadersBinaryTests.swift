import DigestCore
import DigestImport
import DigestStore
import DigestTesting
import Foundation
import Testing

/// `digest readers set` and `digest readers show` as the binary runs them, on a SQLite file.
@Suite struct ReadersBinaryTests {
    @Test func setRecordsEachChangeAndShowListsIt() async throws {
        let store = try await StoreHarness(.sqlite)
        let reader = Reader(
            id: "u1", locale: "pl-PL", timeZone: "Europe/Warsaw", optedOut: false,
            devices: [Device(token: "secret-token-u1-abcd", platform: .android)])
        _ = try await store.withImporter { try await $0.sink.write(.users([reader])) }
        try await store.write([FixtureMessage(user: "u1", variant: .image)])
        let db = store.directory.path("store.sqlite")

        let set = try await DigestBinary.run([
            "readers", "set", "--db", db, "u1", "--every", "2", "--from", "2026-W45", "--mute", "sports", "--mute", "politics",
            "--follow", "science", "--pause-until", "2026-12-14",
        ])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(set.stdout.contains("preferences version 0 → 1"), "\(set.stdout)")
        #expect(
            set.stdout.contains(
                #"after  {"every":2,"from":"2026-W45","pausedUntil":"2026-12-14","follow":["science"],"mute":["sports","politics"],"off":false}"#
            ), "\(set.stdout)")

        // Only what the options name changes; a followed topic that is muted is said to be muted.
        let second = try await DigestBinary.run([
            "readers", "set", "--db", db, "u1", "--unmute", "sports", "--resume", "--follow", "politics", "--off",
        ])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stdout.contains("version 1 → 2"))
        #expect(second.stdout.contains("note: followed and muted, so muted: politics"), "\(second.stdout)")
        let again = try await DigestBinary.run(["readers", "set", "--db", db, "u1", "--off"])
        #expect(again.stdout.contains("nothing changed (version 2)"), "\(again.stdout)")

        let shown = try await DigestBinary.run(["readers", "show", "--db", db, "u1"])
        #expect(shown.status == 0, "\(shown.stderr)")
        for line in [
            "preferences (version 2):", "  digest: off", "  every: 2 weeks from 2026-W45", "  paused until: -",
            "  follow: science, politics", "  mute: politics", "last digests (1):", "  2026-W47 Image: android sent",
            "preference changes (2):",
        ] {
            #expect(shown.stdout.contains(line + "\n"), "\(line) not in:\n\(shown.stdout)")
        }
        // Tokens masked.
        #expect(shown.stdout.contains("reader u1 · pl-PL · Europe/Warsaw\n"))
        #expect(shown.stdout.contains("  fcm android …abcd\n") && !shown.stdout.contains("secret-token"), "\(shown.stdout)")

        let json = try await DigestBinary.run(["readers", "show", "--db", db, "u1", "--json"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["version"] as? Int == 2)
        let changes = try #require(object["preference_changes"] as? [[String: Any]])
        #expect(changes.map { $0["source"] as? String } == ["cli", "cli"])
        #expect((changes[0]["after"] as? [String: Any])?["off"] as? Bool == true)
        #expect((object["digests"] as? [[String: Any]])?.first?["variant"] as? String == "Image")

        // Usage errors: 64; an unknown reader: 1.
        #expect(try await DigestBinary.run(["readers", "set", "--db", db, "u1", "--every", "3"]).status == 64)
        #expect(try await DigestBinary.run(["readers", "set", "--db", db, "u1", "--mute", ""]).status == 64)
        #expect(try await DigestBinary.run(["readers", "set", "--db", db, "u1"]).status == 64)
        let unknown = try await DigestBinary.run(["readers", "show", "--db", db, "nobody"])
        #expect(unknown.status == 1 && unknown.stderr.contains("no reader 'nobody'"), "\(unknown.stderr)")
    }
}
