import DigestCore
import DigestTesting
import Foundation
import Testing

/// APNs devices through the real binary, on both stores, before the composer can encode for APNs:
/// imported with their provider, never encoded as FCM (counted `provider_unsupported`, a reader with
/// nothing else skipped for it), and the outbox's rows, stats and peek name their provider.
@Suite struct ProviderRunTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let apnsToken = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"

    func files(in directory: TemporaryDirectory) throws -> [String] {
        let users = try directory.write("users.jsonl", lines: [
            #"{"id":"u-both","locale":"en","timeZone":"UTC","devices":[{"token":"fcm-both","platform":"android"},{"token":"\#(Self.apnsToken.uppercased())","provider":"apns","topic":"com.example.news"}]}"#,
            #"{"id":"u-apns","locale":"en","timeZone":"UTC","devices":[{"token":"\#(String(repeating: "e", count: 64))","provider":"apns"}]}"#,
        ])
        let reads = try directory.write("reads.jsonl", lines: [
            #"{"userId":"u-both","articleId":"a2","readAt":"2026-11-12T10:00:00Z","seconds":300}"#,
            #"{"userId":"u-apns","articleId":"a2","readAt":"2026-11-12T10:00:00Z","seconds":300}"#,
        ])
        return [users, Self.fixtures.appendingPathComponent("articles.jsonl").path, reads]
    }

    @Test(arguments: TestStore.allCases) func apnsDevicesAreNeverEncodedAsFCM(store: TestStore) throws {
        let dir = try TemporaryDirectory()
        let db = try store.make(in: dir)
        let imported = try DigestBinary.run(["import", "--db", db, "--strict"] + files(in: dir))
        #expect(imported.status == 0 && imported.stderr.isEmpty, "\(imported.stdout)\(imported.stderr)")
        let run = try DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("users: 2 looked at, 1 digested (0 re-engagement), skipped: provider_unsupported 1"), "\(run.stdout)")
        #expect(run.stdout.contains("devices skipped: provider_unsupported 2"), "\(run.stdout)")
        #expect(run.stdout.contains("messages: 1 built, 1 enqueued"), "\(run.stdout)")

        let stats = try DigestBinary.run(["queue", "stats", "--db", db])
        #expect(stats.status == 0 && stats.stdout.contains("by provider: fcm 1\n"), "\(stats.stdout)\(stats.stderr)")
        let peek = try DigestBinary.run(["queue", "peek", "--db", db])
        let row = try #require(try JSONSerialization.jsonObject(with: Data(peek.stdout.utf8)) as? [String: Any], "\(peek.stdout)")
        #expect(row["user_id"] as? String == "u-both" && row["provider"] as? String == "fcm")
        #expect(row["target"] as? String == "…both" && row["headers"] == nil)
        let shown = try DigestBinary.run(["queue", "peek", "--db", db, "--show-tokens"])
        #expect(shown.stdout.contains(#""target":"fcm-both""#), "\(shown.stdout)")
    }
}
