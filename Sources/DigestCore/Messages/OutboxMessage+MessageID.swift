import Crypto

extension OutboxMessage {
    /// Where a device message stands in the run that composes it: what leads its
    /// ``messageID(dedupeKey:position:)``, so the ids of a run follow the order its rows are inserted.
    public struct RunPosition: Sendable, Hashable {
        /// The run's instant, Unix seconds (the composer's `now`: `--as-of`, or when the run started).
        public var instant: Int64
        /// The batch's number in the run, in the order the run writes its batches (0, 1, 2, …).
        public var batch: Int
        /// The message's place in its batch, in the order the batch inserts its messages.
        public var ordinal: Int

        public init(instant: Int64, batch: Int, ordinal: Int) {
            self.instant = instant
            self.batch = batch
            self.ordinal = ordinal
        }

        /// The position of the message `offset` places after this one in the same batch.
        public func advanced(by offset: Int) -> RunPosition {
            RunPosition(instant: instant, batch: batch, ordinal: ordinal + offset)
        }
    }

    /// How many characters a message id has.
    public static let messageIDLength = 32

    /// Bits of ``RunPosition/batch`` and of ``RunPosition/ordinal`` in an id: 1,048,576 batches a run,
    /// 1,048,576 messages a batch before the field wraps (the id stays unique by its hash part, only
    /// no longer increasing there).
    static let positionFieldBits = 20

    /// Bytes of the dedupe key's SHA-256 at the end of an id: 56 bits.
    static let messageIDHashBytes = 7

    /// A device message's id, 16 bytes as 32 lowercase hex digits: the run's instant (4 bytes,
    /// big-endian Unix seconds), the batch (20 bits) and the message's place in it (20 bits), then the
    /// first 7 bytes of the SHA-256 of the dedupe key. A run's ids increase in the order its rows are
    /// inserted, so the outbox's unique index on `message_id` is written at its right edge rather
    /// than on a random page. Within a run the position alone tells its messages apart; messages of
    /// two runs with the same instant (`--as-of` replays, PostgreSQL workers started in the same
    /// second) at the same position differ by the hash of their different dedupe keys (56 bits), and
    /// the same dedupe key is the same message, which the outbox keeps once. Opaque to the apps (it
    /// names neither the reader nor the token), known before the row is written, and the same on every
    /// retry (the row keeps it; a redone batch's messages are dropped by their dedupe keys).
    public static func messageID(dedupeKey: String, position: RunPosition) -> String {
        let mask = UInt64(1) << positionFieldBits - 1
        let instant = UInt32(clamping: position.instant)
        let order = (UInt64(truncatingIfNeeded: position.batch) & mask) << positionFieldBits
            | UInt64(truncatingIfNeeded: position.ordinal) & mask
        let digest = sha256(dedupeKey)
        // 16 bytes as 32 hex digits, written straight into the string's storage.
        return String(unsafeUninitializedCapacity: messageIDLength) { out in
            var at = 0
            func append(_ byte: UInt8) {
                out[at] = hexDigit(byte >> 4)
                out[at + 1] = hexDigit(byte & 0xF)
                at += 2
            }
            for shift in stride(from: 24, through: 0, by: -8) { append(UInt8(truncatingIfNeeded: instant >> shift)) }
            for shift in stride(from: 2 * positionFieldBits - 8, through: 0, by: -8) {
                append(UInt8(truncatingIfNeeded: order >> UInt64(shift)))
            }
            digest.withUnsafeBytes { hash in
                for byte in hash.prefix(messageIDHashBytes) { append(byte) }
            }
            return at
        }
    }

    /// The earlier message id, before ids were ordered: the first 16 bytes of the SHA-256 of the
    /// dedupe key, lowercase hex. Rows enqueued before keep theirs (the same 32 hex digits, found by
    /// the collector alike); messages built without a run (fixtures, the encoder's
    /// ``NotificationEncoder/messages(for:devices:)``) still get it.
    public static func messageID(dedupeKey: String) -> String {
        sha256(dedupeKey).withUnsafeBytes { hex(UnsafeRawBufferPointer(rebasing: $0.prefix(messageIDLength / 2))) }
    }
}
