import DigestCore
import DigestPostgres
import DigestSQLite
import DigestStore
import Foundation

/// Fills a SQLite outbox with valid FCM v1 messages for sender tests: user `u<i>` with device token
/// `token-<i>` on android, ios and web in turn, each message due at `availableAt`.
package enum OutboxFixture {
    /// The token of message `i`.
    package static func token(_ i: Int) -> String { "token-\(i)-" + String(repeating: "x", count: 100) }

    package static func platform(_ i: Int) -> String { ["android", "ios", "web"][i % 3] }

    /// The request body of message `i` (`invalid`: a data value that is not a string).
    package static func message(_ i: Int, week: String = "2026-W46", invalid: Bool = false) -> String {
        let collapse = "digest-\(week)"
        let data = invalid ? #"{"digest_id":42}"# : #"{"digest_id":"\#(week):u\#(i)","deep_link":"https://digest.example/weekly/\#(week)"}"#
        let section: String
        switch platform(i) {
        case "android":
            section = #""android":{"collapse_key":"\#(collapse)","ttl":"604800s","priority":"normal","data":{"title":"Your week","body":"3 articles, 42 minutes","type":"Default","actions":"[]"}}"#
        case "ios":
            section = #""apns":{"headers":{"apns-push-type":"alert","apns-priority":"5","apns-expiration":"1796000000","apns-collapse-id":"\#(collapse)"},"payload":{"aps":{"alert":{"title":"Your week","body":"3 articles"},"category":"WEEKLY_DIGEST","thread-id":"weekly-digest"}}}"#
        default:
            section = #""webpush":{"headers":{"TTL":"604800","Urgency":"normal"},"notification":{"title":"Your week","body":"3 articles","actions":[],"tag":"\#(collapse)"},"fcm_options":{"link":"https://digest.example/weekly/\#(week)"}}"#
        }
        return #"{"message":{"token":"\#(token(i))","data":\#(data),\#(section)}}"#
    }

    /// Adds messages `1...count` (and their users and devices); `invalid` picks messages to break.
    package static func fill(path: String, count: Int, availableAt: Int64 = 0, week: String = "2026-W46",
                            invalid: (Int) -> Bool = { _ in false }) throws {
        let connection = try SQLiteDatabase.sqlite(path: path).connect()
        try connection.transaction {
            let user = try connection.statement("INSERT INTO users (id, locale, time_zone) VALUES (?, 'en', 'UTC')")
            let device = try connection.statement("INSERT INTO devices (user_pk, token, platform) VALUES (?, ?, ?)")
            let outbox = try connection.statement(
                """
                INSERT INTO digest_outbox (dedupe_key, week, user_id, platform, variant, message, report, available_at, created_at, target)
                VALUES (?, ?, ?, ?, 'Default', ?, '{}', ?, 0, ?)
                """)
            for i in 1...count {
                user.reset()
                user.bind("u\(i)", at: 1)
                try user.run()
                let pk = connection.lastInsertRowID
                device.reset()
                device.bind(pk, at: 1)
                device.bind(token(i), at: 2)
                device.bind(platform(i), at: 3)
                try device.run()
                outbox.reset()
                outbox.bind("\(week):u\(i):\(i)", at: 1)
                outbox.bind(week, at: 2)
                outbox.bind("u\(i)", at: 3)
                outbox.bind(platform(i), at: 4)
                outbox.bind(message(i, week: week, invalid: invalid(i)), at: 5)
                outbox.bind(availableAt, at: 6)
                outbox.bind(token(i), at: 7)
                try outbox.run()
            }
        }
    }

    /// Messages by state.
    package static func states(path: String) throws -> [String: Int] {
        let statement = try SQLiteDatabase.sqlite(path: path).connect().statement("SELECT state, count(*) FROM digest_outbox GROUP BY state")
        var counts: [String: Int] = [:]
        while try statement.step() { counts[statement.string(0)] = statement.int(1) }
        return counts
    }

    /// One SQL value (the first column of the first row) as text.
    package static func scalar(path: String, _ sql: String) throws -> String? {
        let statement = try SQLiteDatabase.sqlite(path: path).connect().statement(sql)
        return try statement.step() ? statement.optionalString(0) : nil
    }
}

extension OutboxFixture {
    /// Adds messages `1...count` to a migrated PostgreSQL outbox, through the run's own ledger (one
    /// multi-row insert per thousand).
    package static func fill(postgres url: String, count: Int, availableAt: Int64 = 0, week: String = "2026-W46") async throws {
        let isoWeek = try ISOWeek(parsing: week)
        let database = try PostgresDatabase.postgres(url: url)
        try await database.withRunning {
            try await database.withLedger { ledger in
                _ = try await ledger.begin(week: isoWeek, now: 0)
                for start in stride(from: 1, through: count, by: 1000) {
                    let messages = (start...min(count, start + 999)).map { i in
                        OutboxMessage(
                            dedupeKey: "\(week):u\(i):\(i)", week: week, userID: "u\(i)", platform: Platform(rawValue: platform(i)) ?? .android,
                            variant: .defaultText, message: Array(message(i, week: week).utf8), report: "{}", availableAt: availableAt)
                    }
                    _ = try await ledger.commit(week: isoWeek, through: 0, messages: messages, counters: RunCounters(), now: 0)
                }
            }
        }
    }
}
