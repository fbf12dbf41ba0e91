import DigestCore
import Testing

/// `message_id`: the run's instant and the message's place in the run, then a hash of the dedupe key.
@Suite struct MessageIDTests {
    static let key = "2026-W47:u1:\(OutboxMessage.tokenHash("tok"))"

    func id(_ key: String = key, instant: Int64 = 1_795_424_400, batch: Int, ordinal: Int) -> String {
        OutboxMessage.messageID(dedupeKey: key, position: OutboxMessage.RunPosition(instant: instant, batch: batch, ordinal: ordinal))
    }

    @Test func layoutIsInstantBatchOrdinalThenHash() {
        let id = id(batch: 0x12345, ordinal: 0x6789a)
        #expect(id.count == OutboxMessage.messageIDLength)
        #expect(id.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(id.hasPrefix("6b040090" + "12345" + "6789a"))
        // The last 7 bytes are the first 7 of the dedupe key's SHA-256, as the earlier id began.
        #expect(id.hasSuffix(OutboxMessage.messageID(dedupeKey: Self.key).prefix(14)))
    }

    @Test func idsIncreaseWithThePlaceInTheRun() {
        let order = [
            id(instant: 1_795_424_399, batch: 900, ordinal: 9_000),
            id(batch: 0, ordinal: 0), id(batch: 0, ordinal: 1), id(batch: 0, ordinal: 255), id(batch: 0, ordinal: 256),
            id(batch: 1, ordinal: 0), id(batch: 255, ordinal: 3), id(batch: 4_096, ordinal: 0),
            id(instant: 1_795_424_401, batch: 0, ordinal: 0),
        ]
        #expect(order == order.sorted())
        #expect(Set(order).count == order.count)
    }

    @Test func twoRunsAtOneInstantDifferByTheKey() {
        let other = "2026-W47:u2:\(OutboxMessage.tokenHash("tok"))"
        #expect(id(batch: 2, ordinal: 5) != id(other, batch: 2, ordinal: 5))
        #expect(id(batch: 2, ordinal: 5) == id(batch: 2, ordinal: 5), "the same message, the same id")
    }

    @Test func fieldsPastTheirWidthWrapAndKeepTheFormat() {
        let wrapped = id(instant: Int64(UInt32.max) + 10, batch: 1 << 20 + 1, ordinal: -1)
        #expect(wrapped.count == OutboxMessage.messageIDLength)
        #expect(wrapped.hasPrefix("ffffffff" + "00001" + "fffff"))
    }
}
