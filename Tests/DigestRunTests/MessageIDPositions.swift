/// `text` with each `message_id`'s run position (its first 18 hex digits: the run's instant, the batch
/// and the place in it) blanked out, the dedupe key's hash that ends it kept: runs that batch the same
/// readers differently (batch or chunk sizes, stores) give the same messages but for it. Both
/// `"message_id":"…"` and jsonb's `"message_id": "…"` (PostgreSQL's bodies).
func withoutIDPositions(_ text: String) -> String {
    text.replacing(/"message_id":\s*"[0-9a-f]{18}([0-9a-f]{14})"/) { #""message_id":"…\#($0.output.1)""# }
}
