import DigestCore
import DigestTesting
import Foundation
import Testing

/// APNs devices through the real binary, on both stores: imported with their provider, encoded as
/// direct APNs requests (the payload in `message`, the headers beside it, the device's own topic or
/// none: the sender adds its `--apns-topic`), never as FCM; the outbox's rows, stats and peek name
/// their provider.
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

    @Test(arguments: TestStore.allCases) func apnsDevicesAreEncodedAsAPNsRequests(store: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let db = try await store.make(in: dir)
        let imported = try await DigestBinary.run(["import", "--db", db, "--strict"] + files(in: dir))
        #expect(imported.status == 0 && imported.stderr.isEmpty, "\(imported.stdout)\(imported.stderr)")
        let run = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", "2026-11-16T12:00:00Z"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("users: 2 looked at, 2 digested (0 re-engagement)"), "\(run.stdout)")
        #expect(!run.stdout.contains("provider_unsupported"), "\(run.stdout)")
        #expect(run.stdout.contains("messages: 3 built, 3 enqueued"), "\(run.stdout)")

        let stats = try await DigestBinary.run(["queue", "stats", "--db", db])
        #expect(stats.status == 0 && stats.stdout.contains("by provider: apns 2, fcm 1\n"), "\(stats.stdout)\(stats.stderr)")
        let peek = try await DigestBinary.run(["queue", "peek", "--db", db, "--limit", "3", "--show-tokens"])
        let rows = try peek.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "\(peek.stdout)")
        }
        #expect(rows.count == 3, "\(peek.stdout)")
        let fcm = try #require(rows.first { $0["provider"] as? String == "fcm" })
        #expect(fcm["user_id"] as? String == "u-both" && fcm["target"] as? String == "fcm-both" && fcm["headers"] == nil)
        let apns = rows.filter { $0["provider"] as? String == "apns" }
        #expect(Set(apns.compactMap { $0["target"] as? String }) == [Self.apnsToken, String(repeating: "e", count: 64)])
        for row in apns {
            #expect(row["platform"] as? String == "ios")
            // The payload as sent: `aps` first, no FCM envelope, no token in it.
            let message = try #require(row["message"] as? [String: Any], "\(row)")
            #expect(message["aps"] != nil && message["message"] == nil && message["message_id"] as? String != nil)
            let headers = try #require(row["headers"] as? [String: Any], "\(row)")
            #expect(headers["apns-push-type"] as? String == "alert" && headers["apns-id"] as? String != nil)
            #expect(headers["apns-topic"] as? String == (row["user_id"] as? String == "u-both" ? "com.example.news" : nil))
        }
        let masked = try await DigestBinary.run(["queue", "peek", "--db", db])
        #expect(!masked.stdout.contains(Self.apnsToken) && masked.stdout.contains("…both"), "\(masked.stdout)")
    }
}
