import DigestCore
package import Foundation

/// Everything a store holds about a reader, exported or forgotten for good (`digest readers export`
/// and `forget`, docs/008): both stores implement it.
package protocol ReaderDataStore: Sendable {
    /// Writes everything the store holds about reader `id` into `export` as one JSON object (the keys
    /// of ``ReaderExport/Section``, in that order), reading the long lists (reads, messages, events)
    /// in batches so that memory does not grow with them. Returns `false`, having written nothing,
    /// when the store holds no reader `id`.
    func exportReader(_ id: String, into export: ReaderExport) async throws -> Bool

    /// Removes every row about `ids` (one batch: the caller splits long lists), in one transaction:
    /// a crash leaves each reader whole or gone. With `dryRun`, counts what would go and removes
    /// nothing. Ids the store does not hold are listed in ``ForgetOutcome/unknown``.
    func forgetReaders(_ ids: [String], dryRun: Bool) async throws -> ForgetOutcome

    /// After the last batch: what is left of the forgotten bytes beyond the rows, and makes it go
    /// where it can (SQLite: a `TRUNCATE` checkpoint that empties the `-wal`, waiting up to `wait`
    /// for other processes' readers).
    func finishForgetting(wait: Duration) async throws -> ForgetResidue
}

/// What one batch of ``ReaderDataStore/forgetReaders(_:dryRun:)`` removed (or, in a dry run, would).
package struct ForgetOutcome: Sendable, Hashable {
    /// The readers the store held (and no longer does, unless a dry run).
    package var readers: Int
    /// The ids the store does not hold, in the order given.
    package var unknown: [String]
    /// Rows removed (or to remove) by table; a table with none is absent.
    package var removed: [String: Int]

    package init(readers: Int = 0, unknown: [String] = [], removed: [String: Int] = [:]) {
        self.readers = readers
        self.unknown = unknown
        self.removed = removed
    }

    /// Adds another batch's counts.
    package mutating func add(_ other: ForgetOutcome) {
        readers += other.readers
        unknown += other.unknown
        removed.merge(other.removed, uniquingKeysWith: +)
    }
}

/// What remains of forgotten readers once their rows are gone.
package enum ForgetResidue: Sendable, Hashable {
    /// Nothing: no byte of theirs is left in the store's files (SQLite after its checkpoint).
    case none
    /// SQLite: the checkpoint could not empty the `-wal` within the wait (another process reads):
    /// the rows are gone, the bytes not yet. The command exits 75 and says so.
    case walNotTruncated(busyFor: Duration)
    /// PostgreSQL: the rows are gone; what the operator must still see to (dead tuples until VACUUM,
    /// WAL segments and backups by their retention, rows in the publisher's own views, named), one
    /// sentence a line, printed once.
    case advice([String])
}

/// The tables with a reader column (named `user_id` or `user_pk`, or `users.id`) or rows found
/// through one (events by their message), as each store names them: what a test compares with the
/// schema so that a table added later cannot escape export and forget.
package protocol ReaderDataTables {
    /// Every table ``ReaderDataStore/forgetReaders(_:dryRun:)`` removes rows from.
    static var forgottenTables: Set<String> { get }
}

/// One reader's export as it is written: a JSON object whose keys come in the order of ``Section``,
/// each written once (a section the store has nothing for is an empty array, or `null` for
/// `preferences` of a store whose view is the publisher's and has no row). Values are the records
/// below, encoded with sorted keys; long lists are streamed element by element. Bytes go to `output`
/// in pieces of about 64 KiB and at ``finish()``.
package final class ReaderExport {
    package enum Section: String, CaseIterable, Sendable {
        case reader, preferences, preference_changes, devices, reads, messages, picks, events, test_sends
    }

    private let output: ([UInt8]) throws -> Void
    private var buffer: [UInt8] = []
    private var next = 0
    private var inArray = false
    private var elements = 0
    private let encoder = JSONEncoder.sorted

    package init(output: @escaping ([UInt8]) throws -> Void) {
        self.output = output
        buffer.reserveCapacity(1 << 16)
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    /// Writes `section` with a single value.
    package func value(_ section: Section, _ value: some Encodable) throws {
        try key(section)
        buffer += try encoder.encode(value)
        try flushIfFull()
    }

    /// Writes `section` as an array whose elements `body` appends with ``element(_:)``.
    package func array(_ section: Section, _ body: () async throws -> Void) async throws {
        try key(section)
        buffer.append(UInt8(ascii: "["))
        inArray = true
        elements = 0
        try await body()
        inArray = false
        buffer.append(UInt8(ascii: "]"))
        try flushIfFull()
    }

    /// One element of the array being written.
    package func element(_ value: some Encodable) throws {
        precondition(inArray, "ReaderExport.element outside array(_:_:)")
        if elements > 0 { buffer.append(UInt8(ascii: ",")) }
        elements += 1
        buffer += try encoder.encode(value)
        try flushIfFull()
    }

    /// Closes the object (every section must have been written) and hands over the last bytes,
    /// followed by a line feed.
    package func finish() throws {
        precondition(next == Section.allCases.count, "ReaderExport.finish before every section")
        buffer += Array("}\n".utf8)
        try output(buffer)
        buffer.removeAll(keepingCapacity: true)
    }

    private func key(_ section: Section) throws {
        let all = Section.allCases
        precondition(next < all.count && all[next] == section, "ReaderExport: \(section) out of order")
        buffer.append(UInt8(ascii: next == 0 ? "{" : ","))
        buffer += Array("\"\(section.rawValue)\":".utf8)
        next += 1
    }

    private func flushIfFull() throws {
        guard buffer.count >= 1 << 16 else { return }
        try output(buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}

/// The records of an export (docs/008 describes each field). Instants are RFC 3339 UTC strings
/// (``Timestamp/format(_:)``); an optional without a value is left out.
package enum ExportedData {
    /// `reader`.
    package struct Reader: Encodable, Sendable, Hashable {
        package var id: String
        package var locale: String
        package var zone: String
        package init(id: String, locale: String, zone: String) {
            self.id = id
            self.locale = locale
            self.zone = zone
        }
    }

    /// `preferences`: ``ReaderPreferences`` as the preferences API writes them, with their version.
    package struct Preferences: Encodable, Sendable {
        package var stored: StoredPreferences
        package init(_ stored: StoredPreferences) { self.stored = stored }
        package func encode(to encoder: any Encoder) throws {
            guard case .object(var object) = try StoredJSON(decoding: Data(stored.preferences.json.utf8)) else { return }
            object["version"] = .integer(Int64(stored.version))
            try StoredJSON.object(object).encode(to: encoder)
        }
    }

    /// An element of `preference_changes`, oldest first.
    package struct PreferenceChangeRecord: Encodable, Sendable {
        package var change: PreferenceChange
        /// The press's action (`fewer`, `pause`, `off`) for source `action`.
        package var action: String?
        package init(_ change: PreferenceChange, action: String?) {
            self.change = change
            self.action = action
        }
        package func encode(to encoder: any Encoder) throws {
            var object: [String: StoredJSON] = [
                "at": .string(Timestamp.format(change.at)), "source": .string(change.source.rawValue),
                "before": try StoredJSON(decoding: Data(change.before.json.utf8)), "after": try StoredJSON(decoding: Data(change.after.json.utf8)),
            ]
            if let id = change.messageID { object["message_id"] = .string(id) }
            if let action { object["action"] = .string(action) }
            try StoredJSON.object(object).encode(to: encoder)
        }
    }

    /// An element of `devices`: the device as the store holds it, its token or subscription and keys
    /// in full, and whether the token is remembered dead.
    package struct Device: Encodable, Sendable, Hashable {
        package var token: String
        package var platform: String
        package var provider: String
        /// The APNs bundle id the device names, if any.
        package var topic: String?
        /// Web Push: the subscription's `p256dh` and `auth` keys as the browser gave them.
        package var keys: Keys?
        package var registeredAt: String?
        package var listPosition: Int?
        /// The dead-token entry of this token, if any.
        package var dead: Dead?

        package struct Keys: Encodable, Sendable, Hashable {
            package var p256dh: String
            package var auth: String
            package init(p256dh: String, auth: String) {
                self.p256dh = p256dh
                self.auth = auth
            }
        }
        package struct Dead: Encodable, Sendable, Hashable {
            package var diedAt: String
            package var reason: String
            package init(diedAt: String, reason: String) {
                self.diedAt = diedAt
                self.reason = reason
            }
            enum CodingKeys: String, CodingKey { case diedAt = "died_at", reason }
        }

        package init(
            token: String, platform: String, provider: String, topic: String? = nil, keys: Keys? = nil, registeredAt: String? = nil,
            listPosition: Int? = nil, dead: Dead? = nil
        ) {
            self.token = token
            self.platform = platform
            self.provider = provider
            self.topic = topic
            self.keys = keys
            self.registeredAt = registeredAt
            self.listPosition = listPosition
            self.dead = dead
        }
        enum CodingKeys: String, CodingKey {
            case token, platform, provider, topic, keys, dead
            case registeredAt = "registered_at", listPosition = "list_position"
        }
    }

    /// An element of `reads`, oldest first.
    package struct Read: Encodable, Sendable, Hashable {
        package var articleID: String
        package var readAt: String
        package var seconds: Int
        package init(articleID: String, readAt: String, seconds: Int) {
            self.articleID = articleID
            self.readAt = readAt
            self.seconds = seconds
        }
        enum CodingKeys: String, CodingKey { case articleID = "article_id", readAt = "read_at", seconds }
    }

    /// An element of `messages`, in the outbox's order: the message as sent (its body as the provider
    /// got it, APNs headers), its state and times.
    package struct Message: Encodable, Sendable {
        package var messageID: String?
        package var week: String
        package var platform: String
        package var provider: String
        package var variant: String
        package var state: String
        package var target: String
        /// The provider's body (the stored JSON, as an object).
        package var message: JSONText
        package var headers: JSONText?
        /// What the report reads (A/B arm, timing, `fewer_topic`, …), as stored.
        package var report: JSONText
        package var locale: String?
        package var timing: String?
        package var dueLocal: String?
        package var attempts: Int
        package var lastError: String?
        package var createdAt: String
        package var availableAt: String
        package var sentAt: String?
        package var settledAt: String?

        package init(
            messageID: String?, week: String, platform: String, provider: String, variant: String, state: String, target: String,
            message: JSONText, headers: JSONText?, report: JSONText, locale: String?, timing: String?, dueLocal: String?, attempts: Int,
            lastError: String?, createdAt: String, availableAt: String, sentAt: String?, settledAt: String?
        ) {
            self.messageID = messageID
            self.week = week
            self.platform = platform
            self.provider = provider
            self.variant = variant
            self.state = state
            self.target = target
            self.message = message
            self.headers = headers
            self.report = report
            self.locale = locale
            self.timing = timing
            self.dueLocal = dueLocal
            self.attempts = attempts
            self.lastError = lastError
            self.createdAt = createdAt
            self.availableAt = availableAt
            self.sentAt = sentAt
            self.settledAt = settledAt
        }
        enum CodingKeys: String, CodingKey {
            case messageID = "message_id", week, platform, provider, variant, state, target, message, headers, report, locale, timing
            case dueLocal = "due_local", attempts, lastError = "last_error", createdAt = "created_at", availableAt = "available_at"
            case sentAt = "sent_at", settledAt = "settled_at"
        }
    }

    /// An element of `picks`: the articles a week's digest offered (what "never repeated" reads).
    package struct Picks: Encodable, Sendable, Hashable {
        package var week: String
        package var articleIDs: [String]
        package init(week: String, articleIDs: [String]) {
            self.week = week
            self.articleIDs = articleIDs
        }
        enum CodingKeys: String, CodingKey { case week, articleIDs = "article_ids" }
    }

    /// An element of `events` (of the reader's messages) or of a test send's `events`.
    package struct Event: Encodable, Sendable, Hashable {
        package var messageID: String
        package var type: String
        /// `nil` for the types without one (stored as `''`).
        package var action: String?
        package var at: String
        package var receivedAt: String
        package init(messageID: String, type: String, action: String?, at: String, receivedAt: String) {
            self.messageID = messageID
            self.type = type
            self.action = action
            self.at = at
            self.receivedAt = receivedAt
        }
        enum CodingKeys: String, CodingKey { case messageID = "message_id", type, action, at, receivedAt = "received_at" }
    }

    /// An element of `test_sends`, with the events its device reported.
    package struct TestSend: Encodable, Sendable, Hashable {
        package var messageID: String
        package var sentAt: String
        package var device: String
        package var week: String
        package var provider: String
        package var platform: String
        package var variant: String
        package var events: [Event]
        package init(
            messageID: String, sentAt: String, device: String, week: String, provider: String, platform: String, variant: String,
            events: [Event]
        ) {
            self.messageID = messageID
            self.sentAt = sentAt
            self.device = device
            self.week = week
            self.provider = provider
            self.platform = platform
            self.variant = variant
            self.events = events
        }
        enum CodingKeys: String, CodingKey {
            case messageID = "message_id", sentAt = "sent_at", device, week, provider, platform, variant, events
        }
    }
}

/// Stored JSON text written into an export as the JSON value it is (not as a string).
package struct JSONText: Encodable, Sendable, Hashable {
    package var text: String
    package init(_ text: String) { self.text = text }
    package func encode(to encoder: any Encoder) throws {
        try StoredJSON(decoding: Data(text.utf8)).encode(to: encoder)
    }
}

/// A JSON value read back from stored text, to be written again as JSON (objects' keys sorted by
/// the encoder).
package indirect enum StoredJSON: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([StoredJSON])
    case object([String: StoredJSON])

    /// `data` as JSON (a fragment allowed).
    package init(decoding data: Data) throws {
        self = try JSONDecoder().decode(StoredJSON.self, from: data)
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([StoredJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: StoredJSON].self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}
