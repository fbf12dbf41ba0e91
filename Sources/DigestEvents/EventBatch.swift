package import DigestCore
package import DigestStore
import DigestImport

/// The body of `POST /v1/events`, read: each event parsed or refused with its reason.
///
/// The body must be a JSON object whose `events` is a list of at most ``maxEvents`` elements
/// (``EventBodyError`` otherwise: the whole request is refused); each element is judged alone. An
/// element needs `message_id` (32 lowercase hex digits), `type`, `at` (RFC 3339, at most
/// ``maxFuture`` seconds after `now`) and, for `type` `action`, `action`; other keys are ignored, so
/// apps may send more than this collector reads. Whether the message exists, and whether `at` is
/// after it, only the store can say (``EventSink/record(_:now:)``).
package struct EventBatch: Sendable, Hashable {
    /// Most events a request may carry.
    package static let maxEvents = 500
    /// Most bytes a request body may have.
    package static let maxBodyBytes = 1 << 20
    /// How far after its receipt an event's `at` may be (device clocks run fast): a day.
    package static let maxFuture: Int64 = 86_400
    /// Most bytes of an action's id.
    package static let maxActionBytes = 64

    /// The events that passed, with their index in the request.
    package var events: [IndexedEvent]
    /// The refused ones.
    package var rejected: [RejectedEvent]
    /// The `reply_key` of the events that carry one (a string), by index in the request.
    package var replyKeys: [Int: String] = [:]

    package init(events: [IndexedEvent] = [], rejected: [RejectedEvent] = []) {
        self.events = events
        self.rejected = rejected
    }

    /// Reads a request body received at `now` (Unix seconds).
    package static func parse(_ body: [UInt8], now: Int64) throws(EventBodyError) -> EventBatch {
        guard body.count <= maxBodyBytes else { throw EventBodyError(.tooLarge, "the body is over \(maxBodyBytes) bytes") }
        let value: JSONValue
        do {
            value = try JSONLineParser.parse(body)
        } catch {
            throw EventBodyError(.notJSON, "the body is not JSON: \(error.reason)")
        }
        guard case .object(let object) = value else { throw EventBodyError(.notJSON, "the body is \(value.kind), not an object") }
        guard case .array(let elements)? = object["events"] else {
            throw EventBodyError(.notJSON, "the body has no \"events\" list")
        }
        guard elements.count <= maxEvents else {
            throw EventBodyError(.tooManyEvents, "\(elements.count) events, over the limit of \(maxEvents)")
        }
        var batch = EventBatch()
        batch.events.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            switch event(element, now: now) {
            case .success(let event):
                batch.events.append(IndexedEvent(index: index, event: event))
                if case .object(let fields) = element, case .string(let replyKey)? = fields["reply_key"] { batch.replyKeys[index] = replyKey }
            case .failure(let reason): batch.rejected.append(RejectedEvent(index: index, reason: reason.rejection))
            }
        }
        return batch
    }

    /// Why an element was refused (an `Error` for `Result`).
    struct Refusal: Error {
        let rejection: EventRejection
        init(_ rejection: EventRejection) { self.rejection = rejection }
    }

    static func event(_ element: JSONValue, now: Int64) -> Result<AppEvent, Refusal> {
        guard case .object(let fields) = element else { return .failure(Refusal(.notAnObject)) }
        guard case .string(let id)? = fields["message_id"], isMessageID(id) else { return .failure(Refusal(.badMessageID)) }
        guard case .string(let typeName)? = fields["type"] else { return .failure(Refusal(.missingType)) }
        guard let type = AppEventType(rawValue: typeName) else { return .failure(Refusal(.unknownType)) }
        var action = ""
        switch (type, fields["action"]) {
        case (.action, nil), (.action, .null?): return .failure(Refusal(.missingAction))
        case (.action, .string(let name)?):
            guard isAction(name) else { return .failure(Refusal(.badAction)) }
            action = name
        case (.action, _?): return .failure(Refusal(.badAction))
        case (_, nil), (_, .null?): break
        case (_, _?): return .failure(Refusal(.unexpectedAction))
        }
        guard case .string(let text)? = fields["at"] else { return .failure(Refusal(.missingAt)) }
        guard let at = Timestamp.parse(text) else { return .failure(Refusal(.badAt)) }
        guard at <= now + maxFuture else { return .failure(Refusal(.future)) }
        return .success(AppEvent(messageID: id, type: type, action: action, at: at))
    }

    /// Moves the presses of ``ReaderAction`` buttons (`fewer`, `pause`, `off`) without a reply key
    /// that `keys` verifies for their message id (any, when `keys` is `nil`) to ``rejected`` as
    /// ``EventRejection/badReplyKey``; returns the presses that stay, with their action.
    package mutating func screenReplyKeys(_ keys: ReplyKeys?) -> [(IndexedEvent, ReaderAction)] {
        var presses: [(IndexedEvent, ReaderAction)] = []
        var kept: [IndexedEvent] = []
        kept.reserveCapacity(events.count)
        var refused = false
        for item in events {
            guard item.event.type == .action, let action = ReaderAction(rawValue: item.event.action) else {
                kept.append(item)
                continue
            }
            guard let keys, let replyKey = replyKeys[item.index], keys.verifies(replyKey, messageID: item.event.messageID) else {
                rejected.append(RejectedEvent(index: item.index, reason: .badReplyKey))
                refused = true
                continue
            }
            presses.append((item, action))
            kept.append(item)
        }
        if refused {
            events = kept
            rejected.sort { $0.index < $1.index }
        }
        return presses
    }

    /// 32 lowercase hex digits, as ``OutboxMessage/messageID(dedupeKey:position:)`` makes them (and
    /// ``OutboxMessage/messageID(dedupeKey:)`` made them before).
    static func isMessageID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// 1–64 ASCII letters, digits, `_`, `-` or `.`.
    static func isAction(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxActionBytes
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            }
    }
}

/// A request body refused as a whole: what the collector answers 400 or 413 with.
package struct EventBodyError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        /// Not JSON, not an object, or no `events` list: 400.
        case notJSON
        /// Over ``EventBatch/maxBodyBytes``: 413.
        case tooLarge
        /// Over ``EventBatch/maxEvents`` events: 413.
        case tooManyEvents
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}
