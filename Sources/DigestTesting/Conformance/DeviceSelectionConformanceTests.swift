import DigestCore
import DigestStore
import Foundation
import Testing
import DigestImport

/// A reader with more devices than a run sends to, on both stores: every device is imported, and
/// every way the stores read a reader (a run's batches, a rolling run's zone batches, the previews'
/// look-up by id) gives the same ``DeviceSelection/limit`` live devices in ``DeviceSelection`` order;
/// a dead device frees its place. On PostgreSQL an adopter's view without the ordering columns is
/// capped too, in byte order of token.
@Suite struct DeviceSelectionConformanceTests {
    static let week = try! ISOWeek(parsing: "2026-W46")
    /// When the two devices below die (after every registration of the fixture).
    static let died: Int64 = 1_795_000_000

    /// Listed place → registration (`nil`: undated). Tokens are named so that their byte order is not
    /// the listing order (``token(_:)``), and one registration is shared by two devices.
    static let registrations: [Int64?] = [
        nil, 1_790_000_000, nil, 1_793_000_000, nil, 1_792_000_000, nil, 1_793_000_000, nil, nil, 1_789_000_000, nil,
        nil, nil, 1_794_000_000, nil, nil, nil, nil, nil, nil, nil, nil,
    ]

    /// The token of the device listed at `place`: `tok-` and a two-digit permutation of the places.
    static func token(_ place: Int) -> String {
        let scrambled = place * 7 % registrations.count
        return "tok-\(scrambled < 10 ? "0" : "")\(scrambled)"
    }

    static let many = Reader(
        id: "u-many", locale: "en", timeZone: "UTC", optedOut: false,
        devices: registrations.enumerated().map { place, registered in
            Device(token: token(place), platform: [.android, .ios, .web][place % 3], registeredAt: registered)
        })

    /// The rule written out by hand for the places left after `dead`: dated by registration (the tie of
    /// places 3 and 7: the later listed first), then the undated from the last listed back.
    static func expected(dead: Set<Int>) -> [String] {
        let dated = [14, 7, 3, 5, 1, 10]
        let undated = [22, 21, 20, 19, 18, 17, 16, 15, 13, 12, 11, 9, 8, 6, 4, 2, 0]
        return Array((dated + undated).filter { !dead.contains($0) }.prefix(20)).map(token)
    }

    /// The reader as each read path of the store gives them; on PostgreSQL a run's batch is a chunk of
    /// `week` (a week no earlier call used).
    func readBack(_ store: StoreHarness, week: ISOWeek) async throws -> [String: Reader] {
        var found: [String: Reader] = [:]
        found["user(id:)"] = try await store.withReader { try await $0.user(id: "u-many") }?.reader
        found["users(idPrefix:)"] = try await store.withReader { try await $0.users(idPrefix: "u-m", limit: 5) }.first?.reader
        if store.backend == .sqlite {
            found["nextBatch(after:)"] = try await store.withReader {
                try await $0.nextBatch(week: Self.week, after: 0, limit: 100)
            }?.users.first { $0.reader.id == "u-many" }?.reader
            found["nextBatch(zones:)"] = try await store.withReader {
                try await $0.nextBatch(week: Self.week, zones: [ZoneCursor(zone: "UTC", seq: 0)], limit: 100)
            }.users.first { $0.reader.id == "u-many" }?.reader
        } else {
            // A chunk claimed from a new week's split, done at once so the next read claims afresh.
            found["nextBatch(after:)"] = try await store.withReader { reader in
                _ = try await store.withLedger { try await $0.begin(week: week, now: 0) }
                let batch = try await reader.nextBatch(week: week, after: 0, limit: 100)
                _ = try await store.withLedger {
                    try await $0.commit(week: week, through: batch?.position ?? 0, messages: [], counters: RunCounters(), now: 0)
                }
                return batch?.users.first { $0.reader.id == "u-many" }?.reader
            }
        }
        return found
    }

    /// Marks `tokens` dead as the sender does: a message to each, leased and settled as UNREGISTERED.
    func kill(_ tokens: [String], in store: StoreHarness, at now: Int64) async throws {
        let messages = tokens.map { token in
            OutboxMessage(
                dedupeKey: OutboxMessage.dedupeKey(week: Self.week, userID: "u-many", token: token), week: Self.week.description,
                userID: "u-many", platform: .android, variant: .defaultText, message: Array(#"{"message":{"token":"\#(token)"}}"#.utf8),
                report: "{}", availableAt: 0)
        }
        try await store.withLedger { ledger in
            _ = try await ledger.begin(week: Self.week, now: 0)
            #expect(try await ledger.commit(week: Self.week, through: 0, messages: messages, counters: RunCounters(), now: 0) == tokens.count)
        }
        try await store.withConsumer { consumer in
            let leased = try await consumer.lease(owner: "s", limit: 100, now: now, leaseSeconds: 60, maxAttempts: 5, providers: [.fcm])
            #expect(leased.count == tokens.count)
            let settled = try await consumer.settle(
                leased.map { .unregistered(id: $0.id, reason: "UNREGISTERED") }, owner: "s", now: now, maxAttempts: 5)
            #expect(settled == tokens.count)
        }
    }

    @Test(arguments: Backend.allCases) func aReaderGetsTheirTwentyNewestLiveDevicesThenTheLaterListed(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let other = Reader(id: "u-other", locale: "en", timeZone: "UTC", optedOut: false, devices: [Device(token: "tok-other", platform: .ios)])
        _ = try await store.withImporter { try await $0.sink.write(.users([other, Self.many])) }
        let table = backend == .sqlite ? "devices" : "digest_import_devices"
        #expect(try store.sql("SELECT count(*) FROM \(table)") == "24", "every device is stored")

        for (path, reader) in try await readBack(store, week: try ISOWeek(parsing: "2026-W40")) {
            #expect(reader.devices.map(\.token) == Self.expected(dead: []), "\(backend) \(path)")
            #expect(reader.devices == reader.devices.map { device in Self.many.devices.first { $0.token == device.token }! })
            #expect(reader.devicesOverLimit == 3 && reader.deadTokens == 0, "\(backend) \(path)")
        }
        // The newest device and an undated one die: two of those left out come in.
        try await kill([Self.token(14), Self.token(18)], in: store, at: Self.died)
        let after = try await readBack(store, week: try ISOWeek(parsing: "2026-W41"))
        #expect(after.count == (backend == .sqlite ? 4 : 3))
        for (path, reader) in after {
            #expect(reader.devices.map(\.token) == Self.expected(dead: [14, 18]), "\(backend) \(path)")
            #expect(reader.devicesOverLimit == 1 && reader.deadTokens == 2, "\(backend) \(path)")
        }
        #expect(Self.expected(dead: [14, 18]).suffix(2) == [Self.token(4), Self.token(2)])
        #expect(try await store.withReader { try await $0.user(id: "u-other") }?.reader.devices.map(\.token) == ["tok-other"])
    }

    /// The listing order is the latest line's: a re-import listing the devices the other way round
    /// changes which undated devices are read (and counts as a change).
    @Test(arguments: Backend.allCases) func aReimportInAnotherOrderChangesWhichUndatedDevicesAreRead(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let undated = (0..<22).map { Device(token: Self.token($0), platform: .android) }
        func listing(_ devices: [Device]) -> Reader {
            Reader(id: "u-many", locale: "en", timeZone: "UTC", optedOut: false, devices: devices)
        }
        _ = try await store.withImporter { try await $0.sink.write(.users([listing(undated)])) }
        var read = try await store.withReader { try await $0.user(id: "u-many") }?.reader
        #expect(read?.devices.map(\.token) == Array(undated.reversed().prefix(20).map(\.token)))
        let again = try await store.withImporter { try await $0.sink.write(.users([listing(undated.reversed())])) }
        #expect(again.written == 1)
        read = try await store.withReader { try await $0.user(id: "u-many") }?.reader
        #expect(read?.devices.map(\.token) == Array(undated.prefix(20).map(\.token)))
        #expect(read?.devicesOverLimit == 2)
    }

    /// An adopter's `digest_devices` view with neither `registered_at` nor `list_position`: each reader
    /// still gets 20 devices, the tokens greatest in byte order first (read as listed in byte order),
    /// a dead one freeing its place; with `registered_at` only, the dated ones first.
    @Test func anAdoptersViewWithoutOrderColumnsIsCappedInByteOrderOfToken() async throws {
        let store = try await StoreHarness(.postgres)
        let readers = ["u-many", "u-two"].map { Reader(id: $0, locale: "en", timeZone: "UTC", optedOut: false, devices: []) }
        _ = try await store.withImporter { try await $0.sink.write(.users(readers)) }
        // 25 tokens whose byte order differs from their numeric order (and from the rows' order in the table).
        try store.sql(
            """
            CREATE TABLE app_push_tokens (account text, push_token text, os text, seen_at timestamptz);
            INSERT INTO app_push_tokens
                SELECT 'u-many', 'tok-' || (i * 7 % 25), CASE WHEN i % 2 = 0 THEN 'android' ELSE 'ios' END,
                       CASE WHEN i IN (3, 11) THEN to_timestamp(1790000000 + i) END
                FROM generate_series(0, 24) AS i;
            INSERT INTO app_push_tokens VALUES ('u-two', 'tok-b', 'web', NULL), ('u-two', 'tok-a', 'web', NULL), ('u-two', 'x', 'symbian', NULL);
            DROP VIEW digest_devices;
            CREATE VIEW digest_devices AS SELECT account AS user_id, push_token AS token, os AS platform FROM app_push_tokens;
            """)
        let tokens = (0..<25).map { "tok-\($0 * 7 % 25)" }
        let byteOrder = tokens.sorted { $1.utf8.lexicographicallyPrecedes($0.utf8) }
        var many = try await store.withReader { try await $0.user(id: "u-many") }?.reader
        #expect(many?.devices.map(\.token) == Array(byteOrder.prefix(20)))
        #expect(many?.devicesOverLimit == 5 && many?.deadTokens == 0)
        // An unknown platform is no device at all; two devices are simply both read.
        let two = try await store.withReader { try await $0.user(id: "u-two") }?.reader
        #expect(two?.devices.map(\.token) == ["tok-b", "tok-a"] && two?.devicesOverLimit == 0)

        // The first in byte order dies (never registered in this view: dead until revived).
        try await kill([byteOrder[0]], in: store, at: Self.died)
        many = try await store.withReader { try await $0.user(id: "u-many") }?.reader
        #expect(many?.devices.map(\.token) == Array(byteOrder.dropFirst().prefix(20)))
        #expect(many?.devicesOverLimit == 4 && many?.deadTokens == 1)

        // The same view with the registration: the two dated devices first (the later one first).
        try store.sql(
            """
            DROP VIEW digest_devices;
            CREATE VIEW digest_devices AS SELECT account AS user_id, push_token AS token, os AS platform, seen_at AS registered_at
                FROM app_push_tokens;
            """)
        many = try await store.withReader { try await $0.user(id: "u-many") }?.reader
        let dated = ["tok-\(11 * 7 % 25)", "tok-\(3 * 7 % 25)"]
        #expect(many?.devices.map(\.token) == dated + Array(byteOrder.dropFirst().filter { !dated.contains($0) }.prefix(18)))
        #expect(many?.devicesOverLimit == 4 && many?.deadTokens == 1)
    }

    /// The import keeps a reader listed with more than 20 devices, with all of them, counts them
    /// apart from skipped lines, and `--strict` goes on.
    @Test(arguments: Backend.allCases) func theImportKeepsAReaderWithMoreThanTwentyDevicesAndCountsThem(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        func line(_ id: String, _ tokens: [String]) -> String {
            let devices = tokens.map { #"{"token":"\#($0)","platform":"android"}"# }.joined(separator: ",")
            return #"{"id":"\#(id)","devices":[\#(devices)]}"#
        }
        let users = try store.directory.write("users.jsonl", lines: [
            line("u-23", (0..<23).map { "a\($0)" }),
            line("u-20", (0..<20).map { "b\($0)" }),
            // 21 entries, 20 distinct tokens: within the limit.
            line("u-dup", (0..<20).map { "c\($0)" } + ["c0"]),
            // Over the limit, then listed again within it: the later line stands.
            line("u-again", (0..<21).map { "d\($0)" }),
            line("u-again", ["d0"]),
            line("u-22", (0..<22).map { "e\($0)" }),
        ])
        let summary = try await store.withImporter { base in
            var importer = base
            importer.strict = true
            return try await importer.importFile(users, as: .users)
        }
        #expect(summary.devicesOverLimit == 2, "u-23 and u-22")
        #expect(summary.skipped == ["duplicate_id": 1] && summary.written == 5)
        let table = backend == .sqlite ? "devices d JOIN users u ON u.pk = d.user_pk" : "digest_import_devices d JOIN digest_import_users u ON u.id = d.user_id"
        #expect(try store.sql("SELECT u.id, count(*) FROM \(table) GROUP BY u.id ORDER BY u.id") == "u-20|20\nu-22|22\nu-23|23\nu-again|1\nu-dup|20")
        let read = try await store.withReader { try await $0.user(id: "u-23") }?.reader
        #expect(read?.devices.map(\.token) == (3..<23).reversed().map { "a\($0)" } && read?.devicesOverLimit == 3)
    }
}
