import DigestCore
import DigestEvents
import DigestPostgres
import DigestSQLite
import DigestStore
import DigestTesting
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The two stores; every store test runs on both.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }
}

/// One outbox message of the fixture: its group and whether it was sent.
struct FixtureMessage: Sendable {
    var user: String
    var platform: Platform = .android
    var variant: Variant = .bigText
    var locale: String? = "en"
    var arm: String?
    var sent = true
    var week = "2026-W47"
    /// Where a run put the message (its id is then an ordered one); `nil`: the earlier hash id, as on
    /// rows enqueued before ids were ordered.
    var position: OutboxMessage.RunPosition?

    var dedupeKey: String { "\(week):\(user):h-\(user)-\(platform.rawValue)" }
    var messageID: String {
        position.map { OutboxMessage.messageID(dedupeKey: dedupeKey, position: $0) } ?? OutboxMessage.messageID(dedupeKey: dedupeKey)
    }
}

/// A new migrated store of one backend with an outbox written at ``EventsHarness/createdAt``.
struct EventsHarness: Sendable {
    /// When the fixture's messages were written: 2026-11-23T09:00:00Z.
    static let createdAt: Int64 = 1_795_424_400
    /// The collector's fixed clock: 2026-11-23T12:00:00Z.
    static let now: Int64 = createdAt + 3 * 3600

    let backend: Backend
    let directory: TemporaryDirectory
    let database: any DigestDatabase
    let url: String?

    init(_ backend: Backend) async throws {
        self.backend = backend
        directory = try TemporaryDirectory()
        switch backend {
        case .sqlite:
            let sqlite = SQLiteDatabase.sqlite(path: directory.path("store.sqlite"))
            _ = try await sqlite.migrate()
            database = sqlite
            url = nil
        case .postgres:
            let url = try PostgresCluster.shared().makeDatabase("events")
            let postgres = try PostgresDatabase.postgres(url: url)
            _ = try await postgres.migrate()
            database = postgres
            self.url = url
        }
    }

    /// Writes `messages` to the outbox (through the run's ledger) and marks the sent ones `sent`.
    func write(_ messages: [FixtureMessage]) async throws {
        try await Self.write(database, messages)
        let sent = messages.filter(\.sent).map { "'\($0.dedupeKey)'" }
        if !sent.isEmpty {
            let at = backend == .sqlite ? "\(Self.createdAt + 60)" : "to_timestamp(\(Self.createdAt + 60))"
            try sql("UPDATE digest_outbox SET state = 'sent', sent_at = \(at), settled_at = \(at) WHERE dedupe_key IN (\(sent.joined(separator: ",")))")
        }
    }

    private static func write<D: DigestDatabase>(_ database: D, _ messages: [FixtureMessage]) async throws {
        let byWeek = Dictionary(grouping: messages, by: \.week)
        for (name, group) in byWeek.sorted(by: { $0.key < $1.key }) {
            let week = try ISOWeek(parsing: name)
            let outbox = group.map { m in
                OutboxMessage(
                    dedupeKey: m.dedupeKey, week: m.week, userID: m.user, platform: m.platform, variant: m.variant,
                    message: Array(#"{"message":{}}"#.utf8),
                    report: m.arm.map { #"{"arm":"\#($0)"}"# } ?? "{}", availableAt: createdAt, locale: m.locale,
                    messageID: m.messageID)
            }
            try await database.withLedger { ledger in
                _ = try await ledger.begin(week: week, now: createdAt)
                _ = try await ledger.commit(week: week, through: 0, messages: outbox, counters: RunCounters(), now: createdAt)
            }
        }
    }

    /// Runs SQL on the store and returns its rows as `a|b` lines.
    @discardableResult
    func sql(_ statement: String) throws -> String {
        switch backend {
        case .sqlite:
            return try SQLiteDatabase.sqlite(path: directory.path("store.sqlite")).connect().lines(statement)
        case .postgres:
            return try PostgresCluster.shared().sql(statement, url: url!)
        }
    }

    /// Runs a collector over this store on a free loopback port for `body`, with the fixed clock.
    func withCollector<T: Sendable>(keys: AppKeys, _ body: @Sendable @escaping (Int) async throws -> T) async throws -> T {
        try await Self.withCollector(database, keys: keys, body)
    }

    private static func withCollector<D: DigestDatabase, T: Sendable>(
        _ database: D, keys: AppKeys, _ body: @Sendable @escaping (Int) async throws -> T
    ) async throws -> T {
        try await database.withEventSink { sink in
            var logger = Logger(label: "digest.collect.test")
            logger.logLevel = .critical  // not the server's cancellation at the end of each test
            let collector = EventCollector(sink: sink, keys: keys, configuration: .init(port: 0, now: { now }), logger: logger)
            let (ports, continuation) = AsyncStream<Int>.makeStream()
            let app = collector.application { port in continuation.yield(port) }
            return try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    defer { continuation.finish() }
                    try await app.run()
                }
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next() else { throw HTTP.Failure(message: "the collector did not start") }
                let result: T
                do {
                    result = try await body(port)
                } catch {
                    group.cancelAll()
                    throw error
                }
                group.cancelAll()
                while let _ = try? await group.next() {}
                return result
            }
        }
    }
}

/// A small HTTP client for the tests (Foundation's, over real loopback sockets).
enum HTTP {
    struct Failure: Error { let message: String }

    /// POSTs `body` to the collector on `port`; returns the status and the body.
    static func post(port: Int, path: String = "/v1/events", key: String?, body: Data) async throws -> (Int, Data) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    static func get(port: Int, path: String) async throws -> (Int, Data) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// `{"events":[…]}` of `events` (each a JSON object's text).
    static func body(_ events: [String]) -> Data {
        Data(#"{"events":[\#(events.joined(separator: ","))]}"#.utf8)
    }

    /// One event's JSON.
    static func event(_ id: String, _ type: String, at: Int64 = EventsHarness.createdAt + 60, action: String? = nil) -> String {
        let action = action.map { #","action":"\#($0)""# } ?? ""
        return #"{"message_id":"\#(id)","type":"\#(type)"\#(action),"at":"\#(Timestamp.format(at))"}"#
    }

    static func result(_ data: Data) throws -> EventBatchResult {
        try JSONDecoder().decode(EventBatchResult.self, from: data)
    }
}
