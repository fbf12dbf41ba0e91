import DigestCore
import DigestEvents
import DigestStore
import Foundation
import Testing

/// Reading a request body: each element judged alone, the body refused as a whole only when it is
/// not an object with an `events` list, or too big.
@Suite struct EventBatchTests {
    static let now: Int64 = 1_795_435_200  // 2026-11-23T12:00:00Z
    static let id = String(repeating: "ab", count: 16)

    static func parse(_ element: String) throws -> EventBatch {
        try EventBatch.parse(Array(#"{"events":[\#(element)]}"#.utf8), now: now)
    }

    @Test(arguments: [
        (#"[1]"#, EventRejection.notAnObject),
        (#"{"type":"opened","at":"2026-11-23T09:00:00Z"}"#, .badMessageID),
        (#"{"message_id":7,"type":"opened","at":"2026-11-23T09:00:00Z"}"#, .badMessageID),
        (#"{"message_id":"abab","type":"opened","at":"2026-11-23T09:00:00Z"}"#, .badMessageID),
        (#"{"message_id":"ABABABABABABABABABABABABABABABAB","type":"opened","at":"2026-11-23T09:00:00Z"}"#, .badMessageID),
        (#"{"message_id":"\#(id)","at":"2026-11-23T09:00:00Z"}"#, .missingType),
        (#"{"message_id":"\#(id)","type":["opened"],"at":"2026-11-23T09:00:00Z"}"#, .missingType),
        (#"{"message_id":"\#(id)","type":"clicked","at":"2026-11-23T09:00:00Z"}"#, .unknownType),
        (#"{"message_id":"\#(id)","type":"Opened","at":"2026-11-23T09:00:00Z"}"#, .unknownType),
        (#"{"message_id":"\#(id)","type":"action","at":"2026-11-23T09:00:00Z"}"#, .missingAction),
        (#"{"message_id":"\#(id)","type":"action","action":null,"at":"2026-11-23T09:00:00Z"}"#, .missingAction),
        (#"{"message_id":"\#(id)","type":"opened","action":"later","at":"2026-11-23T09:00:00Z"}"#, .unexpectedAction),
        (#"{"message_id":"\#(id)","type":"action","action":"","at":"2026-11-23T09:00:00Z"}"#, .badAction),
        (#"{"message_id":"\#(id)","type":"action","action":"read later","at":"2026-11-23T09:00:00Z"}"#, .badAction),
        (#"{"message_id":"\#(id)","type":"action","action":3,"at":"2026-11-23T09:00:00Z"}"#, .badAction),
        (#"{"message_id":"\#(id)","type":"action","action":"\#(String(repeating: "x", count: 65))","at":"2026-11-23T09:00:00Z"}"#, .badAction),
        (#"{"message_id":"\#(id)","type":"opened"}"#, .missingAt),
        (#"{"message_id":"\#(id)","type":"opened","at":1795424400}"#, .missingAt),
        (#"{"message_id":"\#(id)","type":"opened","at":"2026-11-23"}"#, .badAt),
        (#"{"message_id":"\#(id)","type":"opened","at":"2026-02-30T09:00:00Z"}"#, .badAt),
        (#"{"message_id":"\#(id)","type":"opened","at":"2026-11-24T12:00:01Z"}"#, .future),
        (#"{"message_id":"\#(id)","type":"opened","at":"2026-11-24T13:00:00+01:00:00"}"#, .badAt),
    ])
    func anElementIsRefusedWithItsReason(element: String, reason: EventRejection) throws {
        let batch = try Self.parse(element)
        #expect(batch.events.isEmpty)
        #expect(batch.rejected == [RejectedEvent(index: 0, reason: reason)])
    }

    @Test func goodElementsPassWithTheirIndex() throws {
        let body = #"""
            {"events":[
              {"message_id":"\#(Self.id)","type":"received","at":"2026-11-23T09:00:00Z","extra":{"ignored":true}},
              {"message_id":"nope","type":"opened","at":"2026-11-23T09:00:00Z"},
              {"message_id":"\#(Self.id)","type":"action","action":"later","at":"2026-11-24T12:00:00Z"},
              {"message_id":"\#(Self.id)","type":"dismissed","action":null,"at":"2026-11-23T10:00:00.250+01:00"}
            ]}
            """#
        let batch = try EventBatch.parse(Array(body.utf8), now: Self.now)
        #expect(batch.events == [
            IndexedEvent(index: 0, event: AppEvent(messageID: Self.id, type: .received, at: 1_795_424_400)),
            IndexedEvent(index: 2, event: AppEvent(messageID: Self.id, type: .action, action: "later", at: Self.now + 86_400)),
            IndexedEvent(index: 3, event: AppEvent(messageID: Self.id, type: .dismissed, at: 1_795_424_400)),
        ])
        #expect(batch.rejected == [RejectedEvent(index: 1, reason: .badMessageID)])
        // The reasons' strings are the contract.
        #expect(EventRejection.allCases.map(\.rawValue) == [
            "not_an_object", "bad_message_id", "unknown_message", "missing_type", "unknown_type", "missing_action",
            "unexpected_action", "bad_action", "missing_at", "bad_at", "future", "before_message",
            "bad_reply_key",
        ])
    }

    @Test(arguments: [
        ("", EventBodyError.Code.notJSON),
        ("{", .notJSON),
        ("[]", .notJSON),
        (#"{"event":[]}"#, .notJSON),
        (#"{"events":{}}"#, .notJSON),
        (#"{"events":[]} x"#, .notJSON),
    ])
    func aBodyThatIsNotSuchJSONIsRefused(body: String, code: EventBodyError.Code) {
        #expect(throws: EventBodyError.self) { try EventBatch.parse(Array(body.utf8), now: Self.now) }
        do {
            _ = try EventBatch.parse(Array(body.utf8), now: Self.now)
        } catch {
            #expect(error.code == code)
        }
    }

    @Test func limitsOnEventsAndBytes() throws {
        let event = #"{"message_id":"\#(Self.id)","type":"opened","at":"2026-11-23T09:00:00Z"}"#
        let full = #"{"events":[\#(Array(repeating: event, count: 500).joined(separator: ","))]}"#
        #expect(try EventBatch.parse(Array(full.utf8), now: Self.now).events.count == 500)
        let over = #"{"events":[\#(Array(repeating: event, count: 501).joined(separator: ","))]}"#
        do {
            _ = try EventBatch.parse(Array(over.utf8), now: Self.now)
            Issue.record("501 events passed")
        } catch {
            #expect(error.code == .tooManyEvents)
        }
        let padded = #"{"pad":"\#(String(repeating: " ", count: EventBatch.maxBodyBytes))","events":[]}"#
        do {
            _ = try EventBatch.parse(Array(padded.utf8), now: Self.now)
            Issue.record("a body over 1 MB passed")
        } catch {
            #expect(error.code == .tooLarge)
        }
    }

    /// `reply_key` is read where it is a string; a press of `fewer`, `pause` or `off` stays only with a
    /// key valid for its message id, other events need none.
    @Test func pressesAreScreenedByTheirReplyKey() throws {
        let keys = try ReplyKeys(secrets: ["a-reply-secret-0123456789"])
        let other = String(repeating: "cd", count: 16)
        let body = #"""
            {"events":[
              {"message_id":"\#(Self.id)","type":"action","action":"pause","reply_key":"\#(keys.sign(messageID: Self.id))","at":"2026-11-23T09:00:00Z"},
              {"message_id":"\#(Self.id)","type":"action","action":"off","reply_key":"\#(keys.sign(messageID: other))","at":"2026-11-23T09:00:00Z"},
              {"message_id":"\#(Self.id)","type":"action","action":"fewer","reply_key":7,"at":"2026-11-23T09:00:00Z"},
              {"message_id":"\#(Self.id)","type":"action","action":"later","at":"2026-11-23T09:00:00Z"},
              {"message_id":"\#(Self.id)","type":"opened","at":"2026-11-23T09:00:00Z"}
            ]}
            """#
        var batch = try EventBatch.parse(Array(body.utf8), now: Self.now)
        #expect(batch.replyKeys == [0: keys.sign(messageID: Self.id), 1: keys.sign(messageID: other)])
        var without = batch
        #expect(without.screenReplyKeys(nil).isEmpty)
        #expect(without.events.map(\.index) == [3, 4])
        #expect(without.rejected == (0...2).map { RejectedEvent(index: $0, reason: .badReplyKey) })
        let presses = batch.screenReplyKeys(keys)
        #expect(presses.map(\.0.index) == [0] && presses.map(\.1) == [.pause])
        #expect(batch.events.map(\.index) == [0, 3, 4])
        #expect(batch.rejected == [1, 2].map { RejectedEvent(index: $0, reason: .badReplyKey) })
    }
}
