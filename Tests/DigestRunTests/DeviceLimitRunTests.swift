import DigestCore
import DigestTesting
import Foundation
import Testing

/// A reader listed with more than 20 devices through the real binary, on both stores: `digest import
/// --strict` keeps them with every device and counts them; a rolling run sends to 20 of them, the
/// newest registrations first, then the undated from the last listed back; on PostgreSQL an adopter's
/// devices view without the ordering columns is capped in byte order of token.
@Suite struct DeviceLimitRunTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    static let asOf = "2026-11-16T12:00:00Z"

    /// `u-many`'s devices in listing order: a registration, or `nil` for an undated device.
    static let registrations: [String?] = [
        nil, "2026-10-01T08:00:00Z", nil, nil, "2026-11-02T08:00:00Z", nil, nil, nil, "2026-10-20T08:00:00Z", nil, nil, nil,
        nil, nil, nil, nil, nil, "2026-11-02T08:00:00Z", nil, nil, nil, nil, nil,
    ]

    /// The token of the device listed at `place`, named so that byte order is not the listing order.
    static func token(_ place: Int) -> String {
        let scrambled = place * 5 % registrations.count
        return "many-\(scrambled < 10 ? "0" : "")\(scrambled)"
    }

    /// The rule by hand: 17 and 4 (registered at the same instant: the later listed first), 8, 1; then
    /// the undated from the last listed back, to 20 devices (places 3, 2 and 0 are left out).
    static let expected = ([17, 4, 8, 1] + [22, 21, 20, 19, 18, 16, 15, 14, 13, 12, 11, 10, 9, 7, 6, 5]).map(token)

    /// The fixtures' articles, `u-many`'s line and a read of theirs in week 2026-W46 (so the reader is
    /// digested, not dormant), written to `directory`.
    func files(in directory: TemporaryDirectory) throws -> [String] {
        let devices = Self.registrations.enumerated().map { place, registered in
            let date = registered.map { #","registeredAt":"\#($0)""# } ?? ""
            return #"{"token":"\#(Self.token(place))","platform":"\#(place % 2 == 0 ? "android" : "ios")"\#(date)}"#
        }
        let users = try directory.write("users.jsonl", lines: [
            #"{"id":"u-many","locale":"en","timeZone":"UTC","devices":[\#(devices.joined(separator: ","))]}"#,
            #"{"id":"u-few","locale":"en","timeZone":"UTC","devices":[{"token":"few-1","platform":"web"}]}"#,
        ])
        let reads = try directory.write("reads.jsonl", lines: [
            #"{"userId":"u-many","articleId":"a2","readAt":"2026-11-12T10:00:00Z","seconds":300}"#,
            #"{"userId":"u-few","articleId":"a2","readAt":"2026-11-12T10:00:00Z","seconds":300}"#,
        ])
        return [users, Self.fixtures.appendingPathComponent("articles.jsonl").path, reads]
    }

    /// The tokens of `user`'s outbox rows, in the order they were enqueued.
    func tokens(of user: String, in db: String) async throws -> [String] {
        let peek = try await DigestBinary.run(["queue", "peek", "--db", db, "--limit", "1000", "--show-tokens"])
        #expect(peek.status == 0, "\(peek.stderr)")
        return try peek.stdout.split(separator: "\n").compactMap { line in
            let row = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            guard row["user_id"] as? String == user else { return nil }
            return ((row["message"] as? [String: Any])?["message"] as? [String: Any])?["token"] as? String
        }
    }

    @Test(arguments: TestStore.allCases) func aRunSendsToTheTwentyNewestDevicesThenTheLaterListed(store: TestStore) async throws {
        let dir = try TemporaryDirectory()
        let db = try await store.make(in: dir)
        let imported = try await DigestBinary.run(["import", "--db", db, "--strict"] + files(in: dir))
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("users: 2 lines, 2 new or changed, 0 unchanged, 0 skipped, devices_over_limit 1"), "\(imported.stdout)")
        #expect(imported.stderr.isEmpty, "\(imported.stderr)")

        let run = try await DigestBinary.run(["run", "--db", db, "--as-of", Self.asOf])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("devices skipped: over_limit 3"), "\(run.stdout)")
        #expect(run.stdout.contains("messages: 21 built, 21 enqueued"), "\(run.stdout)")
        await #expect(try tokens(of: "u-many", in: db) == Self.expected)
        await #expect(try tokens(of: "u-few", in: db) == ["few-1"])
    }

    /// An adopter's `digest_devices` view with no `registered_at` and no `list_position`: the run
    /// still sends to 20 of the reader's devices, the tokens greatest in byte order.
    @Test func anAdoptersViewWithoutOrderColumnsIsCappedInByteOrderOfToken() async throws {
        let dir = try TemporaryDirectory()
        let db = try await TestStore.postgres.make(in: dir)
        #expect(try await DigestBinary.run(["import", "--db", db] + files(in: dir)).status == 0)
        try PostgresCluster.shared().sql(
            """
            CREATE TABLE app_push_tokens AS SELECT user_id AS account, token AS push_token, platform AS os FROM digest_import_devices;
            DELETE FROM digest_import_devices;
            DROP VIEW digest_devices;
            CREATE VIEW digest_devices AS SELECT account AS user_id, push_token AS token, os AS platform FROM app_push_tokens;
            """, url: db)
        let run = try await DigestBinary.run(["run", "--db", db, "--week", "2026-W46", "--as-of", Self.asOf])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("devices skipped: over_limit 3"), "\(run.stdout)")
        let byteOrder = Self.registrations.indices.map(Self.token).sorted { $1.utf8.lexicographicallyPrecedes($0.utf8) }
        await #expect(try tokens(of: "u-many", in: db) == Array(byteOrder.prefix(20)))
    }
}
