import DigestCore
import DigestEvents
import DigestStore
import DigestTesting
import Foundation
import Testing

/// `POST /v1/events` over real HTTP on loopback, on both stores.
@Suite struct CollectorTests {
    static let key = "app-key-0123456789abcdef"

    @Test(arguments: Backend.allCases) func eventsAreRecordedOnceWithEveryReason(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let a = FixtureMessage(user: "u1"), b = FixtureMessage(user: "u2", platform: .ios, variant: .image, locale: "pl")
        try await store.write([a, b])
        let unknown = OutboxMessage.messageID(dedupeKey: "2026-W47:nobody:x")
        let created = StoreHarness.createdAt
        let result = try await store.withCollector(keys: AppKeys(keys: [Self.key])) { port in
            let first = try await HTTP.post(port: port, key: Self.key, body: HTTP.body([
                HTTP.event(a.messageID, "received"),
                HTTP.event(a.messageID, "opened"),
                HTTP.event(a.messageID, "opened"),  // the same again in one request: a duplicate
                HTTP.event(unknown, "opened"),
                HTTP.event(b.messageID, "received", at: created - 1),  // before the message was written
                HTTP.event(b.messageID, "received", at: created),
                HTTP.event(b.messageID, "action", action: "later"),
                HTTP.event(b.messageID, "action", action: "open"),
                HTTP.event(b.messageID, "opened", at: StoreHarness.now + 86_401),
                #"{"message_id":"\#(b.messageID)","type":"clicked","at":"2026-11-23T10:00:00Z"}"#,
            ]))
            #expect(first.0 == 202)
            let second = try await HTTP.post(port: port, key: Self.key, body: HTTP.body([
                HTTP.event(a.messageID, "opened", at: created + 600),  // another time, same event: once
                HTTP.event(a.messageID, "dismissed"),
            ]))
            #expect(second.0 == 202)
            return (try HTTP.result(first.1), try HTTP.result(second.1))
        }
        #expect(result.0 == EventBatchResult(accepted: 5, duplicates: 1, rejected: [
            RejectedEvent(index: 3, reason: .unknownMessage), RejectedEvent(index: 4, reason: .beforeMessage),
            RejectedEvent(index: 8, reason: .future), RejectedEvent(index: 9, reason: .unknownType),
        ]))
        #expect(result.1 == EventBatchResult(accepted: 1, duplicates: 1, rejected: []))
        // The rows carry what the report groups by, copied from the message.
        let rows = try store.sql(
            "SELECT type, action, platform, variant, coalesce(locale, '-') FROM digest_events ORDER BY platform, type, action")
        #expect(rows == """
            dismissed||android|BigText|en
            opened||android|BigText|en
            received||android|BigText|en
            action|later|ios|Image|pl
            action|open|ios|Image|pl
            received||ios|Image|pl
            """)
    }

    /// A test send's message (`digest send-test`) is not in the outbox: its events are taken, counted
    /// as test events, kept in their own table and out of the week's report; test sends are at most
    /// so many a minute per device.
    @Test(arguments: Backend.allCases) func testSendsEventsAreTakenAndKeptOutOfTheReport(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let a = FixtureMessage(user: "u1")
        try await store.write([a])
        let created = StoreHarness.createdAt
        let test = OutboxMessage.messageID(dedupeKey: "test:ana-pixel:1")
        let send = TestSend(messageID: test, device: "Ana's Pixel", userID: "u1", week: a.week, provider: .fcm, platform: "android", variant: "BigText")
        #expect(try await store.database.recordTestSend(send, now: created, perMinute: 2))
        var second = send
        second.messageID = OutboxMessage.messageID(dedupeKey: "test:ana-pixel:2")
        #expect(try await store.database.recordTestSend(second, now: created + 10, perMinute: 2))
        var third = send
        third.messageID = OutboxMessage.messageID(dedupeKey: "test:ana-pixel:3")
        #expect(try await !store.database.recordTestSend(third, now: created + 20, perMinute: 2))  // a third within the minute
        var other = third
        other.device = "Bo's iPhone"
        #expect(try await store.database.recordTestSend(other, now: created + 20, perMinute: 2))  // another device's own count
        third.messageID = OutboxMessage.messageID(dedupeKey: "test:ana-pixel:4")
        #expect(try await store.database.recordTestSend(third, now: created + 61, perMinute: 2))  // the first is a minute old
        let result = try await store.withCollector(keys: AppKeys(keys: [Self.key])) { port in
            let (status, body) = try await HTTP.post(port: port, key: Self.key, body: HTTP.body([
                HTTP.event(test, "received"), HTTP.event(test, "opened"), HTTP.event(test, "opened"), HTTP.event(a.messageID, "received"),
                HTTP.event(test, "displayed", at: created - 1),
            ]))
            #expect(status == 202)
            return try HTTP.result(body)
        }
        #expect(result == EventBatchResult(accepted: 3, duplicates: 1, rejected: [RejectedEvent(index: 4, reason: .beforeMessage)], test: 2))
        #expect(try store.sql("SELECT type FROM digest_test_events ORDER BY type") == "opened\nreceived")
        #expect(try store.sql("SELECT count(*) FROM digest_events") == "1")
        let counts = try await store.database.eventCounts(week: a.week)
        #expect(counts.map(\.received).reduce(0, +) == 1 && counts.map(\.opened).reduce(0, +) == 0)
    }

    @Test(arguments: Backend.allCases) func earlierAndOrderedIDsAreBothFoundByTheMigratedIndex(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        // Every migrated store has the unique index, before any collector opened it.
        let unique =
            backend == .sqlite
            ? "SELECT \"unique\" FROM pragma_index_list('digest_outbox') WHERE name = 'digest_outbox_message'"
            : "SELECT CASE WHEN indisunique THEN 1 ELSE 0 END FROM pg_index WHERE indexrelid = 'digest_outbox_message'::regclass"
        #expect(try store.sql(unique) == "1")
        // A row enqueued before ids were ordered keeps its hash id; a run's row leads with its instant.
        let earlier = FixtureMessage(user: "u1")
        let ordered = FixtureMessage(
            user: "u2", position: OutboxMessage.RunPosition(instant: StoreHarness.createdAt, batch: 3, ordinal: 7))
        try await store.write([earlier, ordered])
        #expect(earlier.messageID == OutboxMessage.messageID(dedupeKey: earlier.dedupeKey))
        #expect(ordered.messageID.hasPrefix(String(StoreHarness.createdAt, radix: 16)))
        let rows = try store.sql("SELECT user_id, message_id FROM digest_outbox ORDER BY user_id")
        #expect(rows == "u1|\(earlier.messageID)\nu2|\(ordered.messageID)")
        let result = try await store.withCollector(keys: AppKeys(keys: [Self.key])) { port in
            let answer = try await HTTP.post(port: port, key: Self.key, body: HTTP.body([
                HTTP.event(earlier.messageID, "opened"), HTTP.event(ordered.messageID, "opened"),
            ]))
            #expect(answer.0 == 202)
            return try HTTP.result(answer.1)
        }
        #expect(result == EventBatchResult(accepted: 2, duplicates: 0, rejected: []))
        #expect(try store.sql("SELECT message_id FROM digest_events ORDER BY message_id").split(separator: "\n").count == 2)
    }

    @Test(arguments: Backend.allCases) func badRequestsGetTheirStatus(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let a = FixtureMessage(user: "u1")
        try await store.write([a])
        try await store.withCollector(keys: AppKeys(keys: [Self.key])) { port in
            let good = HTTP.body([HTTP.event(a.messageID, "opened")])
            #expect(try await HTTP.post(port: port, key: nil, body: good).0 == 401)
            #expect(try await HTTP.post(port: port, key: "app-key-but-not-this-one", body: good).0 == 401)
            #expect(try await HTTP.post(port: port, key: Self.key, body: Data("not json".utf8)).0 == 400)
            #expect(try await HTTP.post(port: port, key: Self.key, body: Data(#"{"events":"none"}"#.utf8)).0 == 400)
            let many = HTTP.body(Array(repeating: HTTP.event(a.messageID, "opened"), count: 501))
            #expect(try await HTTP.post(port: port, key: Self.key, body: many).0 == 413)
            let big = Data(#"{"pad":"\#(String(repeating: "x", count: EventBatch.maxBodyBytes))","events":[]}"#.utf8)
            #expect(try await HTTP.post(port: port, key: Self.key, body: big).0 == 413)
            let health = try await HTTP.get(port: port, path: "/healthz")
            #expect(health.0 == 200 && String(decoding: health.1, as: UTF8.self) == "ok\n")
            // Nothing of the refused requests was recorded; the good one still goes through.
            #expect(try await HTTP.post(port: port, key: Self.key, body: good).0 == 202)
        }
        #expect(try store.sql("SELECT count(*) FROM digest_events") == "1")
    }

    /// Sixteen clients post the same 40 events at once: each event is recorded once, and the
    /// responses' accepted counts add up to 40.
    @Test(arguments: Backend.allCases) func concurrentDuplicatePostsRecordEachEventOnce(backend: Backend) async throws {
        let store = try await StoreHarness(backend)
        let messages = (1...10).map { FixtureMessage(user: "u\($0)") }
        try await store.write(messages)
        let events = messages.flatMap { m in
            ["received", "displayed", "opened"].map { HTTP.event(m.messageID, $0) } + [HTTP.event(m.messageID, "action", action: "later")]
        }
        let results = try await store.withCollector(keys: AppKeys(keys: [Self.key])) { port in
            try await withThrowingTaskGroup(of: EventBatchResult.self) { group in
                for client in 0..<16 {
                    // Each client sends them in its own order.
                    let order = client % 2 == 0 ? events : events.reversed()
                    group.addTask {
                        let (status, data) = try await HTTP.post(port: port, key: Self.key, body: HTTP.body(order))
                        guard status == 202 else { throw HTTP.Failure(message: "status \(status)") }
                        return try HTTP.result(data)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(results.count == 16)
        #expect(results.map(\.accepted).reduce(0, +) == 40)
        #expect(results.map(\.duplicates).reduce(0, +) == 15 * 40)
        #expect(results.allSatisfy { $0.rejected.isEmpty && $0.accepted + $0.duplicates == 40 })
        #expect(try store.sql("SELECT count(*) FROM digest_events") == "40")
    }

    @Test func keysAreReadFromTheFileAndReloaded() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.path("keys.txt")
        try "# the apps' keys\nandroid-key-0123456789\n\n".write(toFile: path, atomically: true, encoding: .utf8)
        let keys = try AppKeys(path: path)
        #expect(keys.accepts("android-key-0123456789") && !keys.accepts("ios-key-0123456789ab") && keys.count == 1)
        try "ios-key-0123456789ab\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try keys.reload() == 1)
        #expect(!keys.accepts("android-key-0123456789") && keys.accepts("ios-key-0123456789ab"))
        // A bad file leaves the keys in force.
        try "short\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: AppKeysError.self) { try keys.reload() }
        #expect(keys.accepts("ios-key-0123456789ab"))
        try "# none\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: AppKeysError(path: path, message: "holds no key")) { try AppKeys(path: path) }
    }
}
