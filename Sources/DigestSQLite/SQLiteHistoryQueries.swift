import DigestCore
import DigestStore
import Foundation

/// The queries behind ``SQLiteHistoryReader`` over the tables `users`, `devices`, `articles` and
/// `reads`: synchronous, on the reader's own thread, where its connection lives.
final class SQLiteHistoryQueries {
    let connection: SQLiteConnection
    /// Article id, topics and language by key, for resolving reads without a join per row: keys
    /// below ``articleTableLimit`` (article keys count up from 1) in a table indexed by key, any
    /// other in a dictionary that starts over when full.
    private var articleTable: [ArticleFacts?] = []
    private let articleTableLimit: Int64 = 4_000_000
    private var articleCache: [Int64: ArticleFacts] = [:]
    /// Keys of the articles ``articles(publishedFrom:until:)`` returned, by id.
    private var articleKeys: [String: Int64] = [:]
    private let articleCacheLimit = 500_000
    /// ``users(zones:limit:)``'s statement per zone.
    private var zoneStatements: [String: SQLiteStatement] = [:]

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    func users(after key: Int64, limit: Int) throws -> [StoredReader] {
        let statement = try connection.statement(
            "SELECT pk, id, locale, time_zone, opted_out, \(SQLitePreferences.columns) FROM users WHERE pk > ? ORDER BY pk LIMIT ?")
        statement.bind(key, at: 1)
        statement.bind(limit, at: 2)
        var users: [StoredReader] = []
        users.reserveCapacity(limit)
        while try statement.step() {
            users.append(Self.storedReader(statement, preferencesAt: 5))
        }
        guard let first = users.first, let last = users.last else { return [] }
        let devices = try connection.statement(
            "SELECT \(Self.deviceColumns) FROM devices d WHERE d.user_pk >= ? AND d.user_pk <= ? ORDER BY d.user_pk, \(Self.deviceOrder)")
        devices.bind(first.key, at: 1)
        devices.bind(last.key, at: 2)
        try Self.attachDevices(devices, to: &users)
        return users
    }

    /// Hands the rows of `devices` (``deviceColumns``, in owner order, then ``deviceOrder``) to `users`
    /// (in key order).
    static func attachDevices(_ devices: SQLiteStatement, to users: inout [StoredReader]) throws {
        var index = 0
        while try devices.step() {
            let owner = devices.int64(0)
            while index < users.count && users[index].key < owner { index += 1 }
            guard index < users.count, users[index].key == owner else { continue }
            addDevice(devices, to: &users[index].reader)
        }
    }

    /// A device row: owner, token, platform, registration, whether the token is dead (its provider
    /// called it unregistered and the app has not registered it since), provider, topic and a Web Push
    /// subscription's keys.
    static let deviceColumns = """
        d.user_pk, d.token, d.platform, d.registered_at,
        EXISTS (SELECT 1 FROM digest_dead_tokens x WHERE x.token = d.token AND (d.registered_at IS NULL OR d.registered_at <= x.died_at)),
        d.provider, d.topic, d.keys_p256dh, d.keys_auth
        """

    /// A reader's device rows in ``DeviceSelection`` order, after the owner.
    static let deviceOrder = DeviceSelection.orderSQL(registeredAt: "d.registered_at", listPosition: "d.list_position", token: "d.token")

    /// Adds the device of a ``deviceColumns`` row (met in ``deviceOrder``) to `reader`: counted among
    /// its dead tokens, or admitted while it has fewer than ``DeviceSelection/limit`` devices, else
    /// counted over the limit.
    static func addDevice(_ row: SQLiteStatement, to reader: inout Reader) {
        guard let platform = Platform(rawValue: row.string(2)), let provider = Provider(rawValue: row.string(5)) else { return }
        if row.int(4) != 0 {
            reader.deadTokens += 1
            return
        }
        var keys: Device.SubscriptionKeys?
        if let p256dh = row.optionalString(7), let auth = row.optionalString(8) { keys = .init(p256dh: p256dh, auth: auth) }
        reader.admit(
            Device(
                token: row.string(1), platform: platform, registeredAt: row.isNull(3) ? nil : row.int64(3), topic: row.optionalString(6),
                provider: provider, subscriptionKeys: keys))
    }

    /// One statement for the batch: the users' keys as a JSON array (`json_each`), each looked up on
    /// the primary key (user, then time) from the earliest start of the batch; rows before a user's
    /// own start are dropped here. Rows come in key, then time order.
    func reads(of users: [StoredReader], since: [Int64]) throws -> [[ReadEvent]] {
        var result = [[ReadEvent]](repeating: [], count: users.count)
        var keys = JSONWriter(capacity: users.count * 8)
        keys.beginArray()
        var earliest = Int64.max
        for (user, start) in zip(users, since) where start != Int64.max {
            keys.value(Int(user.key))
            earliest = min(earliest, start)
        }
        keys.endArray()
        guard earliest != Int64.max else { return result }
        let statement = try connection.statement(
            """
            SELECT user_pk, read_at, article_pk, seconds FROM reads
            WHERE user_pk IN (SELECT value FROM json_each(?1)) AND read_at >= ?2 ORDER BY user_pk, read_at
            """)
        statement.bindText(keys.bytes, at: 1)
        statement.bind(earliest, at: 2)
        var index = 0
        while try statement.step() {
            let owner = statement.int64(0)
            while index < users.count && users[index].key < owner { index += 1 }
            guard index < users.count, users[index].key == owner else { continue }
            let readAt = statement.int64(1)
            guard readAt >= since[index] else { continue }
            let article = try self.article(statement.int64(2))
            result[index].append(
                ReadEvent(
                    articleID: article.id, topics: article.topics, readAt: readAt, seconds: statement.int(3),
                    language: article.language))
        }
        return result
    }

    private typealias ArticleFacts = (id: String, topics: [String], language: String?)

    private func article(_ key: Int64) throws -> ArticleFacts {
        if key >= 0 && key < articleTable.count, let hit = articleTable[Int(key)] { return hit }
        if let hit = articleCache[key] { return hit }
        let statement = try connection.statement("SELECT id, topics, language FROM articles WHERE pk = ?")
        statement.bind(key, at: 1)
        let value: ArticleFacts
        if try statement.step() {
            value = (statement.string(0), Self.decodeTopics(statement.string(1)), statement.optionalString(2))
        } else {
            value = ("", [], nil)
        }
        statement.reset()
        if key >= 0 && key < articleTableLimit {
            if key >= articleTable.count {
                articleTable.append(contentsOf: repeatElement(nil, count: max(Int(key) + 1, articleTable.count * 2) - articleTable.count))
            }
            articleTable[Int(key)] = value
        } else {
            if articleCache.count >= articleCacheLimit { articleCache.removeAll(keepingCapacity: true) }
            articleCache[key] = value
        }
        return value
    }

    func articles(publishedFrom from: Int64, until: Int64) throws -> [Article] {
        let statement = try connection.statement(
            """
            SELECT id, title, url, image_url, topics, published_at, reading_minutes, language, pk
            FROM articles WHERE published_at >= ? AND published_at < ? ORDER BY published_at DESC, id
            """)
        statement.bind(from, at: 1)
        statement.bind(until, at: 2)
        var articles: [Article] = []
        while try statement.step() {
            let article = Article(
                id: statement.string(0), title: statement.string(1), url: statement.string(2),
                imageURL: statement.optionalString(3), topics: Self.decodeTopics(statement.string(4)),
                publishedAt: statement.int64(5), readingMinutes: statement.int(6), language: statement.optionalString(7))
            articleKeys[article.id] = statement.int64(8)
            articles.append(article)
        }
        return articles
    }

    /// The candidates' keys, for the list of candidate ids the last batch asked with (the same list
    /// for a whole run): a set of at most the run's candidates, not of anyone's reads.
    private var candidateKeys: (articles: [String], keys: Set<Int64>)?

    /// Per user, the candidates among `articles` they read before `before`: one statement for the
    /// batch, each user's reads before `before` along the primary key (user, time), kept when their
    /// article is a candidate. Memory is the batch's: nothing of other users is held (a cache of every
    /// user's earlier reads, made once a run, grew with the readers: 58 MB at 1,000,000).
    func earlierReads(of users: [StoredReader], among articles: [String], before: Int64) throws -> [[String]] {
        var result = [[String]](repeating: [], count: users.count)
        guard !users.isEmpty, !articles.isEmpty else { return result }
        let candidates = try keys(ofCandidates: articles)
        guard !candidates.isEmpty else { return result }
        var keys = JSONWriter(capacity: users.count * 8)
        keys.beginArray()
        var position: [Int64: Int] = [:]
        position.reserveCapacity(users.count)
        for (index, user) in users.enumerated() {
            keys.value(Int(user.key))
            position[user.key] = index
        }
        keys.endArray()
        let statement = try connection.statement(
            "SELECT user_pk, article_pk FROM reads WHERE user_pk IN (SELECT value FROM json_each(?1)) AND read_at < ?2")
        statement.bindText(keys.bytes, at: 1)
        statement.bind(before, at: 2)
        while try statement.step() {
            let article = statement.int64(1)
            guard candidates.contains(article), let index = position[statement.int64(0)] else { continue }
            result[index].append(try self.article(article).id)
        }
        return result
    }

    /// The keys of the candidate articles (those the store has), looked up once per list.
    private func keys(ofCandidates articles: [String]) throws -> Set<Int64> {
        if let known = candidateKeys, known.articles == articles { return known.keys }
        let lookup = try connection.statement("SELECT pk FROM articles WHERE id = ?")
        var keys = Set<Int64>()
        keys.reserveCapacity(articles.count)
        for id in articles {
            if let key = articleKeys[id] {
                keys.insert(key)
                continue
            }
            lookup.bind(id, at: 1)
            if try lookup.step() {
                articleKeys[id] = lookup.int64(0)
                keys.insert(lookup.int64(0))
            }
            lookup.reset()
        }
        candidateKeys = (articles, keys)
        return keys
    }

    /// The picks the ledger kept per user and week (`digest_picks`, keyed by user and week): one
    /// statement for the batch, the users' ids as a JSON array; each row's JSON array of ids is
    /// split here.
    func recentPicks(of users: [StoredReader], weeks: [ISOWeek]) throws -> [[String]] {
        var result = [[String]](repeating: [], count: users.count)
        guard !weeks.isEmpty, !users.isEmpty else { return result }
        let weekList = weeks.indices.map { "?\($0 + 2)" }.joined(separator: ", ")
        let statement = try connection.statement(
            "SELECT user_id, picks FROM digest_picks WHERE user_id IN (SELECT value FROM json_each(?1)) AND week IN (\(weekList))")
        var ids = JSONWriter(capacity: users.count * 16)
        ids.beginArray()
        var position: [String: Int] = [:]
        position.reserveCapacity(users.count)
        for (index, user) in users.enumerated() {
            ids.value(user.reader.id)
            position[user.reader.id] = index
        }
        ids.endArray()
        statement.bindText(ids.bytes, at: 1)
        for (index, week) in weeks.enumerated() { statement.bind(week.description, at: Int32(index + 2)) }
        while try statement.step() {
            guard let index = position[statement.string(0)] else { continue }
            result[index].append(contentsOf: Self.decodeStringArray(statement.string(1)))
        }
        return result
    }

    func histories(of users: [StoredReader], request: HistoryRequest) throws -> [ReaderHistory] {
        let reads = try self.reads(of: users, since: request.since)
        let earlier =
            if let before = request.before {
                try earlierReads(of: users, among: request.candidates, before: before)
            } else {
                [[String]](repeating: [], count: users.count)
            }
        let picks = try recentPicks(of: users, weeks: request.pickWeeks)
        return (0..<users.count).map { ReaderHistory(reads: reads[$0], readEarlier: earlier[$0], recentPicks: picks[$0]) }
    }

    /// Runs `body` in a read transaction (`BEGIN DEFERRED`: its first statement takes the snapshot
    /// every later one reads); ends it on return either way.
    func readTransaction<T>(_ body: () throws -> T) throws -> T {
        try connection.execute("BEGIN")
        do {
            let value = try body()
            try connection.execute("COMMIT")
            return value
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The distinct zones, by skipping along the index on (time_zone, seq): one seek a zone.
    func timeZones() throws -> [String] {
        let statement = try connection.statement(
            """
            WITH RECURSIVE z(zone) AS (
                SELECT min(time_zone) FROM users
                UNION ALL
                SELECT (SELECT min(time_zone) FROM users WHERE time_zone > z.zone) FROM z WHERE z.zone IS NOT NULL)
            SELECT zone FROM z WHERE zone IS NOT NULL
            """)
        var zones: [String] = []
        while try statement.step() { zones.append(statement.string(0)) }
        return zones
    }

    /// Up to `limit` users after the zones' cursors, the zones' ranges of the index on (time_zone,
    /// seq) merged by `seq` (one statement a zone, kept prepared across batches), returned in key order
    /// with their devices. Users keep their `seq` until they change, and new users take the next one, so
    /// `seq` order is nearly key order: a run over many zones reads the tables and writes the outbox
    /// almost in order, as a run by key does, rather than sweeping the whole table once a zone. A zone's
    /// cursor is the last `seq` taken from it: the merge took every user of the zone up to there.
    func users(zones: [ZoneCursor], limit: Int) throws -> ZoneBatch {
        var streams: [SQLiteStatement] = []
        streams.reserveCapacity(zones.count)
        defer { for stream in streams { stream.reset() } }
        var heads = SeqHeap()
        var exhausted: [String] = []
        for (index, zone) in zones.enumerated() {
            let stream = try zoneStatement(zone.zone)
            stream.reset()
            stream.bind(zone.zone, at: 1)
            stream.bind(zone.seq, at: 2)
            stream.bind(limit, at: 3)
            streams.append(stream)
            if try stream.step() { heads.push(seq: stream.int64(5), stream: index) } else { exhausted.append(zone.zone) }
        }
        var users: [StoredReader] = []
        users.reserveCapacity(limit)
        var taken = [Int](repeating: 0, count: zones.count)
        var last = zones.map(\.seq)
        while users.count < limit, let head = heads.pop() {
            let stream = streams[head.stream]
            users.append(Self.storedReader(stream, preferencesAt: 6))
            taken[head.stream] += 1
            last[head.stream] = head.seq
            if try stream.step() {
                heads.push(seq: stream.int64(5), stream: head.stream)
            } else if taken[head.stream] < limit {
                exhausted.append(zones[head.stream].zone)  // a stream stops early only at the zone's end
            }
        }
        let cursors = zones.indices.filter { taken[$0] > 0 }.map { ZoneCursor(zone: zones[$0].zone, seq: last[$0], taken: taken[$0]) }
        users.sort { $0.key < $1.key }
        var keys = JSONWriter(capacity: users.count * 8)
        keys.beginArray()
        for user in users { keys.value(Int(user.key)) }
        keys.endArray()
        let devices = try connection.statement(
            """
            SELECT \(Self.deviceColumns) FROM devices d WHERE d.user_pk IN (SELECT value FROM json_each(?1))
            ORDER BY d.user_pk, \(Self.deviceOrder)
            """)
        devices.bindText(keys.bytes, at: 1)
        try Self.attachDevices(devices, to: &users)
        devices.reset()
        return ZoneBatch(users: users, cursors: cursors, exhausted: exhausted)
    }

    /// The prepared statement walking one zone's users by `seq` (a zone's own, so that every zone's
    /// stream is open at once during a merge).
    private func zoneStatement(_ zone: String) throws -> SQLiteStatement {
        if let statement = zoneStatements[zone] { return statement }
        let statement = try SQLiteStatement(
            connection: connection,
            sql: """
                SELECT pk, id, locale, time_zone, opted_out, seq, \(SQLitePreferences.columns) FROM users
                WHERE time_zone = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3
                """)
        zoneStatements[zone] = statement
        return statement
    }

    func countUsers(zones: [ZoneCursor]) throws -> Int {
        let statement = try connection.statement("SELECT count(*) FROM users WHERE time_zone = ? AND seq > ?")
        var total = 0
        for zone in zones {
            statement.reset()
            statement.bind(zone.zone, at: 1)
            statement.bind(zone.seq, at: 2)
            if try statement.step() { total += statement.int(0) }
        }
        statement.reset()
        return total
    }

    func countUsers(after key: Int64) throws -> Int {
        let statement = try connection.statement("SELECT count(*) FROM users WHERE pk > ?")
        statement.bind(key, at: 1)
        defer { statement.reset() }
        return try statement.step() ? statement.int(0) : 0
    }

    func hasReads(from: Int64, until: Int64) throws -> Bool {
        // reads is keyed by user first; an index-free scan stops at the first hit.
        let statement = try connection.statement("SELECT 1 FROM reads WHERE read_at >= ? AND read_at < ? LIMIT 1")
        statement.bind(from, at: 1)
        statement.bind(until, at: 2)
        let found = try statement.step()
        statement.reset()
        return found
    }

    func user(id: String) throws -> StoredReader? {
        try users(where: "id = ?1", bind: id, limit: 1).first
    }

    func users(idPrefix prefix: String, limit: Int) throws -> [StoredReader] {
        // A range on the unique index instead of LIKE, which would not use it.
        try users(where: "id >= ?1 AND id < ?1 || char(1114111)", bind: prefix, limit: limit)
    }

    func users(afterID id: String, limit: Int) throws -> [StoredReader] {
        // `id` is compared by its bytes (SQLite's BINARY collation), on the unique index.
        try users(where: "id > ?1", bind: id, limit: limit)
    }

    private func users(where condition: String, bind value: String, limit: Int) throws -> [StoredReader] {
        let statement = try connection.statement(
            "SELECT pk, id, locale, time_zone, opted_out, \(SQLitePreferences.columns) FROM users WHERE \(condition) ORDER BY id LIMIT ?2")
        statement.bind(value, at: 1)
        statement.bind(limit, at: 2)
        var users: [StoredReader] = []
        while try statement.step() {
            users.append(Self.storedReader(statement, preferencesAt: 5))
        }
        let devices = try connection.statement("SELECT \(Self.deviceColumns) FROM devices d WHERE d.user_pk = ? ORDER BY \(Self.deviceOrder)")
        for index in users.indices {
            devices.reset()
            devices.bind(users[index].key, at: 1)
            while try devices.step() { Self.addDevice(devices, to: &users[index].reader) }
        }
        return users
    }

    /// A user from a row of `SELECT pk, id, locale, time_zone, opted_out, … FROM users` with
    /// ``SQLitePreferences/columns`` from column `preferencesAt`, devices to come.
    private static func storedReader(_ statement: SQLiteStatement, preferencesAt column: Int32) -> StoredReader {
        var reader = Reader(
            id: statement.string(1), locale: statement.string(2), timeZone: statement.string(3), optedOut: statement.int64(4) != 0,
            devices: [])
        if !statement.isNull(column) { reader.preferences = SQLitePreferences.decode(statement, at: column, off: reader.optedOut) }
        return StoredReader(key: statement.int64(0), reader: reader)
    }

    static func encodeTopics(_ topics: [String]) -> String {
        var writer = JSONWriter(capacity: 64)
        writer.beginArray()
        for topic in topics { writer.value(topic) }
        writer.endArray()
        return writer.string
    }

    static func decodeTopics(_ text: String) -> [String] { decodeStringArray(text) }

    /// A JSON array of strings as the ledger and importer write them (`["a","b"]`); anything else,
    /// escapes included, through `JSONDecoder`; `[]` when it is not such an array.
    static func decodeStringArray(_ text: String) -> [String] {
        var text = text
        let fast: [String]? = text.withUTF8 { bytes in
            var result: [String] = []
            var index = 0
            func skipSpaces() { while index < bytes.count, bytes[index] == 0x20 { index += 1 } }
            guard bytes.count >= 2, bytes[0] == UInt8(ascii: "[") else { return nil }
            index = 1
            skipSpaces()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { return index == bytes.count - 1 ? [] : nil }
            while index < bytes.count {
                guard bytes[index] == UInt8(ascii: "\"") else { return nil }
                let start = index + 1
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20 { end += 1 }
                guard end < bytes.count, bytes[end] == UInt8(ascii: "\"") else { return nil }
                result.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self))
                index = end + 1
                skipSpaces()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: "]") { return index == bytes.count - 1 ? result : nil }
                guard bytes[index] == UInt8(ascii: ",") else { return nil }
                index += 1
                skipSpaces()
            }
            return nil
        }
        if let fast { return fast }
        return (try? JSONDecoder().decode([String].self, from: Data(text.utf8))) ?? []
    }
}

/// The zones' next `seq` in a merge: a binary min-heap of (seq, stream).
struct SeqHeap {
    private var items: [(seq: Int64, stream: Int)] = []

    mutating func push(seq: Int64, stream: Int) {
        items.append((seq, stream))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].seq < items[parent].seq else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (seq: Int64, stream: Int)? {
        guard let top = items.first else { return nil }
        let tail = items.removeLast()
        guard !items.isEmpty else { return top }
        items[0] = tail
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var smallest = parent
            if left < items.count && items[left].seq < items[smallest].seq { smallest = left }
            if right < items.count && items[right].seq < items[smallest].seq { smallest = right }
            guard smallest != parent else { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
